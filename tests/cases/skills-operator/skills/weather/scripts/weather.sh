#!/bin/sh
echo "sunny in $1"
