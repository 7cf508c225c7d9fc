"""Calls CPython's allocator through ctypes with sizes no interpreter uses, and
prints the addresses it got, so the test can match them with memtrace's events.

usage: pyalloc.py SIGNAL_FILE [tracemalloc]
Prints "ready", waits for SIGNAL_FILE, does the calls, prints one
"expect {...}" JSON line, then waits until SIGNAL_FILE is removed. With
"tracemalloc", tracemalloc is started after the first marker and stopped
before the last: the program installs an allocator (PyMem_SetAllocator)
while it is traced.
"""
import ctypes
import json
import os
import sys
import time
import tracemalloc

api = ctypes.pythonapi
for name in ("PyObject_Malloc", "PyMem_Malloc"):
    getattr(api, name).restype = ctypes.c_void_p
    getattr(api, name).argtypes = [ctypes.c_size_t]
api.PyObject_Calloc.restype = ctypes.c_void_p
api.PyObject_Calloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
api.PyObject_Realloc.restype = ctypes.c_void_p
api.PyObject_Realloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
for name in ("PyObject_Free", "PyMem_Free"):
    getattr(api, name).restype = None
    getattr(api, name).argtypes = [ctypes.c_void_p]

SMALL, LARGE, CALLOC_N, CALLOC_SIZE, MEM = 77, 700001, 3, 111, 91
MARK_BEGIN, MARK_END = 987651, 987652
signal_file = sys.argv[1]
hooks = sys.argv[2:] == ["tracemalloc"]
print("ready", flush=True)
while not os.path.exists(signal_file):
    time.sleep(0.01)

api.PyObject_Free(api.PyObject_Malloc(MARK_BEGIN))  # the test's window starts
if hooks:
    tracemalloc.start()
small = [api.PyObject_Malloc(SMALL) for _ in range(1000)]   # pymalloc arenas
large = [api.PyObject_Malloc(LARGE) for _ in range(20)]     # handed on to malloc
cal = [api.PyObject_Calloc(CALLOC_N, CALLOC_SIZE) for _ in range(50)]
mem = [api.PyMem_Malloc(MEM) for _ in range(30)]
for p in small[:400]:
    api.PyObject_Free(p)
for p in large[:5]:
    api.PyObject_Free(p)
for p in mem[:10]:
    api.PyMem_Free(p)
api.PyObject_Free(None)
old = cal[0]
cal[0] = api.PyObject_Realloc(old, 5000)
if hooks:
    tracemalloc.stop()
api.PyObject_Free(api.PyObject_Malloc(MARK_END))  # and ends
print("expect " + json.dumps({
    "ok": True, "small": small, "calloc_first": old, "large": large, "calloc": cal, "mem": mem,
    "realloc_old": old, "realloc_new": cal[0]}), flush=True)
while os.path.exists(signal_file):
    time.sleep(0.01)
