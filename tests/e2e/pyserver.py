"""A small server loop: each iteration builds a JSON reply and prints it, until
STOP_FILE exists; then it prints "end N" and exits 0. Its output is a pure
function of the iteration number, so a test can check it byte for byte."""
import hashlib
import json
import os
import sys
import time

stop_file = sys.argv[1]
i = 0
while not os.path.exists(stop_file):
    reply = {"n": i, "items": [str(k) * 3 for k in range(i % 17)], "tag": "x" * (i % 5)}
    body = json.dumps(reply, sort_keys=True)
    print(i, hashlib.sha1(body.encode()).hexdigest(), flush=True)
    i += 1
    time.sleep(0.005)
print("end", i, flush=True)
