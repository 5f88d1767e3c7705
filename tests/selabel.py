#!/usr/bin/env python3
"""tests/selabel.py FILE_CONTEXTS ROOT: for each line "PATH MODE" (octal
st_mode) on stdin, prints "PATH LABEL" with selabel_lookup's answer for
ROOT+PATH, or "PATH -" when it has none: libselinux itself, through ctypes,
as the oracle for e3cp --file-contexts."""
import ctypes
import sys


class Opt(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("value", ctypes.c_char_p)]


SELABEL_CTX_FILE = 0
SELABEL_OPT_PATH = 3

lib = ctypes.CDLL("libselinux.so.1", use_errno=True)
lib.selabel_open.restype = ctypes.c_void_p
lib.selabel_open.argtypes = [ctypes.c_uint, ctypes.POINTER(Opt), ctypes.c_uint]
lib.selabel_lookup.argtypes = [ctypes.c_void_p,
                               ctypes.POINTER(ctypes.c_char_p),
                               ctypes.c_char_p, ctypes.c_int]
opt = Opt(SELABEL_OPT_PATH, sys.argv[1].encode())
h = lib.selabel_open(SELABEL_CTX_FILE, ctypes.byref(opt), 1)
if not h:
    sys.exit("selabel_open failed")
root = "" if sys.argv[2] == "/" else sys.argv[2]
for line in sys.stdin:
    path, mode = line.split()
    con = ctypes.c_char_p()
    r = lib.selabel_lookup(h, ctypes.byref(con), (root + path).encode(),
                           int(mode, 8))
    print(path, con.value.decode() if r == 0 else "-")
