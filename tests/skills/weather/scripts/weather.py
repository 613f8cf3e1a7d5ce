import json, sys
print(json.dumps({"ok": True, "data": {"city": sys.argv[2]}}))
