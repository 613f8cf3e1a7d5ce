#!/bin/sh
echo '{"ok": true, "data": []}'
