# mana_gdb.py - a gdb extension for processes run by mana (mana_lh), live or from a core file.
#
# gdb finds the objects of a process through the list that the main program's dynamic linker
# keeps, and in a mana process that is the lower half's (mana_lh, MPICH, UCX).  The
# application, its libraries and its own libc were loaded by a second ld.so inside mana's
# address window, so without this gdb shows the application's frames as "??".
#
# The command `mana-upper` reads the second ld.so's list out of the process's memory, starting
# from the boundary page at the window's base (include/mana/boundary.h), and gives gdb each
# object's symbols at the address where that ld.so put it.  It works the same in a restarted
# process, whose upper half came from an image and maps no files.  Run it again after the
# application has loaded more objects (dlopen); objects already given are skipped.
import os
import struct

import gdb

WINDOW_BASE = 0x600000000000
BOUNDARY_MAGIC = 0x6D616E61626E6479
# Offsets in struct mana_boundary, pinned there by _Static_asserts.
OFF_VERSION, OFF_APP_BASE, OFF_APP_PATH = 8, 192, 432
MIN_VERSION = 8
PT_LOAD, PT_DYNAMIC, DT_NULL, DT_DEBUG = 1, 2, 0, 21
VDSO_NAME = "linux-vdso.so.1"


def _read(addr, size):
    return bytes(gdb.selected_inferior().read_memory(addr, size))


def _u64(addr):
    return struct.unpack("<Q", _read(addr, 8))[0]


def _string(addr, limit=4096):
    out = b""
    while len(out) < limit:
        try:
            chunk = _read(addr + len(out), 64)
        except gdb.MemoryError:  # the string may end a few bytes before an unmapped page
            chunk = _read(addr + len(out), 1)
        nul = chunk.find(b"\0")
        if nul >= 0:
            return (out + chunk[:nul]).decode(errors="replace")
        out += chunk
    raise gdb.GdbError("mana-upper: the string at %#x is longer than %d bytes" % (addr, limit))


def _r_debug(app_base):
    """The second ld.so's struct r_debug: the main program's DT_DEBUG entry points at it."""
    ident = _read(app_base, 64)
    if ident[:4] != b"\x7fELF":
        raise gdb.GdbError("mana-upper: no ELF header at the application's base %#x" % app_base)
    phoff, = struct.unpack_from("<Q", ident, 32)
    phentsize, phnum = struct.unpack_from("<HH", ident, 54)
    phdrs = [struct.unpack_from("<IIQQQQQQ", _read(app_base + phoff + i * phentsize, 56))
             for i in range(phnum)]
    loads = [p[3] for p in phdrs if p[0] == PT_LOAD]
    dynamic = [p[3] for p in phdrs if p[0] == PT_DYNAMIC]
    if not loads or not dynamic:
        raise gdb.GdbError("mana-upper: the application has no PT_DYNAMIC; is it linked statically?")
    bias = app_base - (min(loads) & ~0xFFF)
    at = dynamic[0] + bias
    while True:
        tag, value = struct.unpack("<qQ", _read(at, 16))
        if tag == DT_NULL:
            raise gdb.GdbError("mana-upper: the application has no DT_DEBUG entry")
        if tag == DT_DEBUG:
            if not value:
                raise gdb.GdbError("mana-upper: the application's ld.so has not started yet")
            return value
        at += 16


def _vdso_file():
    """mana's stand-in for the vDSO: lib/mana/mana_vdso.so beside the mana_lh gdb runs."""
    exe = gdb.current_progspace().filename or ""
    path = os.path.join(os.path.dirname(exe), "..", "lib", "mana", "mana_vdso.so")
    return os.path.normpath(path)


def upper_objects():
    """[(path or None, load bias, name in ld.so's list)] for the upper half, in ld.so's order."""
    try:
        magic = _u64(WINDOW_BASE)
    except gdb.MemoryError:
        raise gdb.GdbError("mana-upper: nothing is mapped at %#x; this is not a process of "
                           "mana_lh" % WINDOW_BASE)
    if magic != BOUNDARY_MAGIC:
        raise gdb.GdbError("mana-upper: no mana boundary page at %#x (magic %#x)" %
                           (WINDOW_BASE, magic))
    version = struct.unpack("<I", _read(WINDOW_BASE + OFF_VERSION, 4))[0]
    if version < MIN_VERSION:
        raise gdb.GdbError("mana-upper: boundary version %d; this script reads %d and later" %
                           (version, MIN_VERSION))
    app_base = _u64(WINDOW_BASE + OFF_APP_BASE)
    app_path_at = _u64(WINDOW_BASE + OFF_APP_PATH)
    r_debug = _r_debug(app_base)
    objects = []
    link = _u64(r_debug + 8)  # r_map
    first = True
    while link:
        l_addr, l_name = _u64(link), _u64(link + 8)
        name = _string(l_name) if l_name else ""
        if first:
            path = _string(app_path_at) if app_path_at else None
        elif name == VDSO_NAME:
            path = _vdso_file()
        else:
            path = name or None
        objects.append((path, l_addr, name))
        first = False
        link = _u64(link + 24)  # l_next
    return objects


class ManaUpper(gdb.Command):
    """Load the symbols of a mana process's upper half: the application and its libraries.

Usage: mana-upper [-v]
Reads the list of objects the application's own ld.so keeps in the process's memory and
gives gdb each one's symbols at its address, so that backtraces, breakpoints and `info
symbol` see the application under mana_lh.  -v lists every object."""

    def __init__(self):
        super().__init__("mana-upper", gdb.COMMAND_FILES)
        self.given = {}

    def invoke(self, arg, from_tty):
        verbose = arg.strip() == "-v"
        key = gdb.selected_inferior().pid
        given = self.given.setdefault(key, set())
        added = skipped = 0
        confirm = gdb.parameter("confirm")
        gdb.execute("set confirm off")
        try:
            for path, bias, name in upper_objects():
                if not path or not os.path.exists(path):
                    skipped += 1
                    print("mana-upper: %s at %#x: no such file here, no symbols" %
                          (path or name or "the application", bias))
                    continue
                if (path, bias) in given:
                    continue
                gdb.execute("add-symbol-file %s -o %#x" % (_quote(path), bias), to_string=True)
                given.add((path, bias))
                added += 1
                if verbose:
                    print("mana-upper: %s at %#x" % (path, bias))
        finally:
            gdb.execute("set confirm %s" % ("on" if confirm else "off"))
        print("mana-upper: symbols of %d upper-half objects loaded (%d before, %d without a file)"
              % (added, len(given) - added, skipped))


def _quote(path):
    return '"%s"' % path.replace("\\", "\\\\").replace('"', '\\"')


ManaUpper()
# mana's own signals, passed on without a stop: SIGSYS for every system call its seccomp filter
# sends to the lower half, and the park signal (MANA_PARK_SIGNAL, 62, SIG62 to gdb) at every
# checkpoint.  Otherwise a `continue` stops at the application's next sleep or mmap.
gdb.execute("handle SIGSYS nostop noprint pass", to_string=True)
gdb.execute("handle SIG62 nostop noprint pass", to_string=True)
