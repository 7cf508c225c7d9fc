"""A small server loop: each iteration builds a JSON reply and prints its digest,
until STOP_FILE exists; then it prints "end N" and exits 0. Its output is a pure
function of the iteration number, so a test can check it line by line.

usage: pyserver.py STOP_FILE      serve
       pyserver.py --expect N     print what N iterations print, without the loop
"""
import hashlib
import json
import os
import sys
import time


def line(i):
    # the padding is over pymalloc's 512-byte limit: it goes to malloc
    reply = {"n": i, "items": [str(k) * 3 for k in range(i % 17)], "pad": "y" * (600 + i % 7)}
    body = json.dumps(reply, sort_keys=True)
    return "%d %s" % (i, hashlib.sha1(body.encode()).hexdigest())


if sys.argv[1] == "--expect":
    n = int(sys.argv[2])
    for i in range(n):
        print(line(i))
    print("end", n)
    sys.exit(0)

stop_file = sys.argv[1]
i = 0
while not os.path.exists(stop_file):
    print(line(i), flush=True)
    i += 1
    time.sleep(0.005)
print("end", i, flush=True)
