#!/usr/bin/env python3
"""Generate mana's MPI bindings from wrappers/mpi_api.txt.

Outputs (into OUTDIR):
  lh_table.h        struct mana_lh_table: one pointer per real MPI function
  lh_table_fill.c   the lower half's instance of that table (PMPI_ entry points of real MPICH)
  stub_wrappers.c   the upper half's MPI_ functions for every entry not marked `custom`
  stub_hooks.h      prototypes of the hooks of the functions marked `after`, `before` or `local`
  stub_aliases.ld   linker script that defines each PMPI_ name as its MPI_ twin
  api_names.txt     the names of all described functions (for the export test)

Standard library only; run by CMake at build time.
"""
import os
import re
import subprocess
import sys

HANDLE_KINDS = {
    "MPI_Comm": "COMM", "MPI_Group": "GROUP", "MPI_Datatype": "DATATYPE", "MPI_Op": "OP",
    "MPI_Errhandler": "ERRHANDLER", "MPI_Info": "INFO", "MPI_File": "FILE", "MPI_Win": "WIN",
    "MPI_Message": "MESSAGE", "MPI_Request": "REQUEST", "MPI_Session": "SESSION",
}
# Kinds whose objects restart rebuilds from records: every new handle of one of these kinds is
# shown to its kind's hook, mana_<kind>_created(new, parent), with the first input handle of
# the same kind as the parent (attributes are copied from it on duplication) or the null handle.
RECORDED_KINDS = {
    "COMM": "MPI_COMM_NULL", "GROUP": "MPI_GROUP_NULL", "DATATYPE": "MPI_DATATYPE_NULL",
    "INFO": "MPI_INFO_NULL", "ERRHANDLER": "MPI_ERRHANDLER_NULL",
}
# Kinds an output may be `shared` for (shared_handles.c gives MPI's extra reference back for
# these), with their null handles, which a free that only counts down writes.
SHARED_KINDS = {"GROUP": "MPI_GROUP_NULL", "ERRHANDLER": "MPI_ERRHANDLER_NULL"}
PARAM_RE = re.compile(r"^(const\s+)?([A-Za-z_]\w*)\s*((?:\*\s*)*)([A-Za-z_]\w*)?\s*((?:\[[^\]]*\])*)$")


class Param:
    def __init__(self, text):
        self.text = text
        m = PARAM_RE.match(text)
        if not m:
            raise ValueError(f"cannot parse parameter '{text}'")
        const, self.ctype, stars, self.name, arrays = m.groups()
        self.const = bool(const)
        self.ptr = stars.count("*") + arrays.count("[")
        self.kind = HANDLE_KINDS.get(self.ctype)
        self.direction = None  # in, out, shared, inout, free, in-array
        self.length = None
        self.keep = None  # keep, keep_root: an input array a persistent request needs again
        self.optional = False  # out_opt: MPI ignores it when NULL


class Function:
    def __init__(self, line, family):
        self.family = family
        proto, _, ann = line.partition("::")
        m = re.match(r"^\s*(.+?)\s*\b(P?MPIX?_\w+)\s*\((.*)\)\s*$", proto)
        if not m:
            raise ValueError(f"cannot parse prototype: {line}")
        self.ret, self.name, args = m.group(1), m.group(2), m.group(3).strip()
        self.variadic = args.endswith("...")
        self.params = [] if args in ("", "void") else [Param(a.strip()) for a in split_args(args) if a.strip() != "..."]
        self.custom = False
        self.coll = False
        self.file_coll = False
        self.group_coll = False
        self.persistent_coll = False
        self.win_coll = False
        self.rma = False
        self.after = False
        self.before = False
        self.mpiwait = False
        self.local = False
        for a in ann.split():
            self.annotate(a)
        for p in self.params:
            if p.kind and p.direction is None:
                p.direction = self.default_direction(p)

    def annotate(self, a):
        if a == "custom":
            self.custom = True
            return
        if a == "coll":
            self.coll = True
            return
        if a == "fcoll":
            self.coll = True
            self.file_coll = True
            return
        if a == "pcoll":
            self.coll = True
            self.persistent_coll = True
            return
        if a == "gcoll":
            self.coll = True
            self.group_coll = True
            return
        if a == "wcoll":
            self.coll = True
            self.win_coll = True
            return
        if a == "rma":
            self.rma = True
            return
        if a == "after":
            self.after = True
            return
        if a == "before":
            self.before = True
            return
        if a == "mpiwait":
            self.mpiwait = True
            return
        if a == "local":
            self.local = True
            return
        m = re.match(r"^(\w+)(?::(\w+))?(?:=(\w+)(?:\[(.+)\])?)?$", a)
        if not m:
            raise ValueError(f"{self.name}: bad annotation '{a}'")
        pname, kind, direction, length = m.groups()
        p = self.param(pname)
        if kind:
            p.kind = kind.upper()
        if direction in ("keep", "keep_root"):
            if not length or p.kind:
                raise ValueError(f"{self.name}: {pname}={direction} needs a length and no handle")
            p.keep, p.length = direction, length
            return
        if direction == "out_opt":
            p.direction, p.optional = "out", True
        elif direction == "shared":
            if p.kind not in SHARED_KINDS or p.ptr != 1:
                raise ValueError(f"{self.name}: {pname}=shared needs a pointer to a handle of "
                                 f"a kind in SHARED_KINDS")
            p.direction = "shared"
        elif direction:
            p.direction = "in-array" if direction == "in" and length else direction
            p.length = length
        elif kind:
            p.direction = "in" if p.ptr == 0 else None

    def param(self, name):
        for p in self.params:
            if p.name == name:
                return p
        raise ValueError(f"{self.name}: no parameter '{name}'")

    def default_direction(self, p):
        if p.ptr == 0:
            return "in"
        if p.ptr == 1 and not p.const and "[" not in p.text:
            return "out"
        if self.custom:
            return None
        raise ValueError(f"{self.name}: handle array '{p.text}' needs an annotation")

    def proto_args(self):
        if not self.params and not self.variadic:
            return "void"
        parts = [p.text for p in self.params]
        if self.variadic:
            parts.append("...")
        return ", ".join(parts)

    def pmpi_name(self):
        return "P" + self.name

    def hook_name(self, when="after"):
        """The hook of an `after` (or `before`) function: mana_after_Comm_set_name for
        MPI_Comm_set_name."""
        return f"mana_{when}_" + self.name.split("_", 1)[1]

    def local_args(self):
        """The parameters of a `local` function's answer: the call's, and where it puts the
        call's result."""
        return ", ".join([p.text for p in self.params] + [f"{self.ret} *result"])


def split_args(args):
    depth, cur, out = 0, "", []
    for ch in args:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def parse(path):
    funcs, family = [], "misc"
    with open(path) as f:
        for raw in f:
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.match(r"^\[(\w+)\]$", line)
            if m:
                family = m.group(1)
                continue
            funcs.append(Function(line, family))
    return funcs


def fnptr_type(fn, name):
    return f"{fn.ret} (*{name})({fn.proto_args()})"


def gen_table_header(funcs):
    out = ["/* Generated by gen_wrappers.py from mpi_api.txt: do not edit. */",
           "#ifndef MANA_LH_TABLE_H", "#define MANA_LH_TABLE_H", "#include <mpi.h>",
           '#include "mana/lh_services.h"', "",
           "struct mana_lh_table {",
           "  struct mana_lh_services svc; /* lower-half services that are not MPI functions */"]
    for fn in funcs:
        out.append(f"  {fnptr_type(fn, fn.name)};")
    out += ["};", "", f"#define MANA_LH_TABLE_ENTRIES {len(funcs)}", "", "#endif", ""]
    return "\n".join(out)


def gen_table_fill(funcs, exported):
    out = ["/* Generated by gen_wrappers.py from mpi_api.txt: do not edit. */",
           "#include \"lh_table.h\"", "",
           "/* The real entry points; PMPI_ ones so that a profiling library preloaded into the",
           " * lower half would not see mana's own calls twice. */",
           "void mana_lh_table_fill(struct mana_lh_table *t)", "{"]
    for fn in funcs:
        target = fn.pmpi_name() if fn.pmpi_name() in exported else fn.name
        out.append(f"  t->{fn.name} = {target};")
    out += ["}", ""]
    return "\n".join(out)


def length_expr(p):
    m = re.match(r"^@(\w+)\((\w+)\)$", p.length)
    if m:
        return f"mana_{m.group(1)}({m.group(2)})"
    return f"(size_t)({p.length})"


# Persistent collective requests (pcoll): what the wrapper records of each argument so that
# a restart can make the request again (wrappers/pcoll.h), and the replay that does it.
def pcoll_arg(fn, p):
    if p.kind == "DATATYPE" and p.direction == "in-array":
        return f"{{.kind = MANA_PA_DATATYPES, .value = (uint64_t)(uintptr_t){p.name}, .n = n_{p.name}}}"
    if p.kind and p.direction == "in":
        kind = {"DATATYPE": "MANA_PA_DATATYPE", "OP": "MANA_PA_OP", "COMM": "MANA_PA_COMM",
                "INFO": "MANA_PA_INFO"}.get(p.kind)
        if not kind:
            raise ValueError(f"{fn.name}: pcoll cannot record a {p.ctype} argument")
        return f"{{.kind = {kind}, .value = (uint64_t)(uint32_t){p.name}}}"
    if p.keep:
        n = length_expr(p)
        if p.keep == "keep_root":
            comm = next(q.name for q in fn.params if q.ctype == "MPI_Comm")
            n = f"(mana_comm_is_root({comm}, root) ? {n} : 0)"
        return (f"{{.kind = MANA_PA_ARRAY, .value = (uint64_t)(uintptr_t){p.name}, "
                f".n = {p.name} ? {n} : 0, .elem = sizeof(*{p.name})}}")
    if "[" in p.text:
        raise ValueError(f"{fn.name}: pcoll array '{p.name}' needs keep[LEN] or keep_root[LEN]")
    if p.ptr:
        return f"{{.kind = MANA_PA_VALUE, .value = (uint64_t)(uintptr_t){p.name}}}"
    return f"{{.kind = MANA_PA_VALUE, .value = (uint64_t)(int64_t){p.name}}}"


def param_type(p):
    return ("const " if p.const else "") + p.ctype + (" " + "*" * p.ptr if p.ptr else "")


def gen_pcoll_replay(fn):
    args, i = [], 0
    for p in fn.params:
        if p.ctype == "MPI_Request" and p.direction == "out":
            args.append("out")
            continue
        t = param_type(p)
        if p.ptr:
            args.append(f"({t})(uintptr_t)a[{i}].real")
        elif p.kind:
            args.append(f"({t})(uint32_t)a[{i}].real")
        else:
            args.append(f"({t})a[{i}].real")
        i += 1
    return "\n".join([
        f"static int mana_replay_{fn.name}(const struct mana_pcoll_arg *a, MPI_Request *out)",
        "{",
        f"  return MANA_LH_CALL_NOPARK({fn.name}, {', '.join(args)});",
        "}", ""])


def request_kind(fn):
    """The drain completes non-blocking collectives, independent file operations and
    request-based RMA operations (`rma`); partitioned requests are marked for partitioned.c,
    and point-to-point requests by their hand-written wrappers."""
    if fn.rma:
        return "MANA_SLOT_REQ_RMA"
    if fn.name in ("MPI_Psend_init", "MPI_Precv_init"):
        return "MANA_SLOT_REQ_PART"
    # Independent file operations complete locally, as sends do; the non-blocking collective
    # ones (_all, `fcoll`) are counted on the clock like any non-blocking collective, so every
    # member has started them at a safe point and the drain completes them (fn.coll below).
    if re.match(r"^MPI_File_i(read|write)(_at|_shared)?(_c)?$", fn.name):
        return "MANA_SLOT_REQ_FILE"
    if fn.coll:
        return "MANA_SLOT_REQ_PCOLL" if "_init" in fn.name else "MANA_SLOT_REQ_COLL"
    return None


def shared_kinds(funcs):
    """The kinds some call hands out again (`shared`): their frees may only count down."""
    return {p.kind for fn in funcs for p in fn.params if p.direction == "shared"}


def shared_calls(funcs):
    """The calls with a `shared` output, in the description's order."""
    return [fn.name for fn in funcs if any(p.direction == "shared" for p in fn.params)]


def share_origin(fn, shared_calls):
    """Where a `shared` output comes from: the call (its place among the calls with such an
    output) and the object it asks, the call's first handle argument."""
    source = next((p for p in fn.params if p.kind and p.direction == "in"), None)
    if source is None:
        return "0"
    return f"MANA_SHARE_ORIGIN({shared_calls.index(fn.name) + 1}, {source.name})"


def gen_wrapper(fn, shared=frozenset(), shared_calls=()):
    body, call, after, cleanup, failed = [], [], [], [], []
    for p in fn.params:
        if p.direction in ("weights", "pvar_handle", "pvar_session"):
            call.append(f"mana_{p.direction}({p.name})")
            continue
        if p.direction == "tdisp":
            # Computed before the call: the arguments are evaluated on the lower half's FS.
            body.append(f"  MPI_Aint t_{p.name} = mana_win_target_disp(win, target_rank, {p.name});")
            call.append(f"t_{p.name}")
            continue
        if not p.kind or p.direction is None:
            call.append(p.name)
            continue
        k, t = p.kind, p.ctype
        sfx = "_PTR" if t == "MPI_File" else ""
        if p.direction == "in":
            body.append(f"  {t} r_{p.name} = MANA_REAL{sfx}({k}, {t}, {p.name});")
            call.append(f"r_{p.name}")
        elif p.direction == "in-array":
            body.append(f"  size_t n_{p.name} = {p.name} ? {length_expr(p)} : 0;")
            body.append(f"  {t} s_{p.name}[MANA_STACK_HANDLES];")
            made = f"{p.name} ? mana_real_array_{k.lower()}({p.name}, n_{p.name}, s_{p.name}) : NULL"
            # The same array passed twice (the send and receive types of MPI_Alltoallw) stays
            # one array: MPICH reports aliased buffers only when the type arrays are the same.
            twin = next((q for q in fn.params[:fn.params.index(p)] if q.direction == "in-array"
                         and q.ctype == p.ctype and q.length == p.length), None)
            if twin:
                body.append(f"  {t} *r_{p.name} = {p.name} == {twin.name} ? r_{twin.name} : ({made});")
                cleanup.append(f"  if (r_{p.name} != s_{p.name} && r_{p.name} != r_{twin.name}) free(r_{p.name});")
            else:
                body.append(f"  {t} *r_{p.name} = {made};")
                cleanup.append(f"  if (r_{p.name} != s_{p.name}) free(r_{p.name});")
            call.append(f"r_{p.name}")
        # Handle pointers: a null pointer goes to MPI as it is, so that MPI reports it.
        elif p.direction in ("out", "pending"):
            # Starts as the application's value, so that a failed call leaves it unchanged
            # unless MPI wrote its null handle there (MANA_FAILED_OUT).
            body.append(f"  {t} r_{p.name} = {p.name} ? *{p.name} : ({t})0;")
            call.append(f"{p.name} ? &r_{p.name} : NULL")
            after.append(f"    *{p.name} = MANA_NEW{sfx}({k}, {t}, r_{p.name});")
            failed.append(f"    MANA_FAILED_OUT{sfx}({p.name}, r_{p.name});")
        elif p.direction == "shared":
            # An object the application may hold already: its handle again (shared_handles.c).
            body.append(f"  {t} r_{p.name} = {p.name} ? *{p.name} : ({t})0;")
            body.append(f"  int made_{p.name} = 0;")
            call.append(f"{p.name} ? &r_{p.name} : NULL")
            origin = share_origin(fn, list(shared_calls)) if fn.name in shared_calls else "0"
            after.append(f"    *{p.name} = ({t})mana_share32(MANA_KIND_{k}, (uint32_t)r_{p.name}, "
                         f"{origin}, &made_{p.name});")
            failed.append(f"    MANA_FAILED_OUT({p.name}, r_{p.name});")
        elif p.direction == "inout":
            body.append(f"  {t} r_{p.name} = {p.name} ? MANA_REAL{sfx}({k}, {t}, *{p.name}) : ({t})0;")
            call.append(f"{p.name} ? &r_{p.name} : NULL")
            after.append(f"    MANA_UPDATE{sfx}({k}, {t}, *{p.name}, r_{p.name});")
        elif p.direction == "free":
            if k in shared:
                # A handle the application got more than once: only counted down until the
                # last free, which MPI sees (shared_handles.c).
                body.append(f"  if ({p.name} && mana_unshare(MANA_KIND_{k}, (uint32_t)*{p.name})) {{")
                body.append(f"    *{p.name} = {SHARED_KINDS[k]};")
                body.append("    MANA_PARK_CHECK();")
                body.append("    return MPI_SUCCESS;")
                body.append("  }")
            body.append(f"  {t} r_{p.name} = {p.name} ? MANA_REAL{sfx}({k}, {t}, *{p.name}) : ({t})0;")
            call.append(f"{p.name} ? &r_{p.name} : NULL")
            after.append(f"    MANA_RETIRE{sfx}({k}, {t}, *{p.name});")
            after.append(f"    *{p.name} = r_{p.name};")
        else:
            raise ValueError(f"{fn.name}: direction {p.direction}")
    # The collective clock: counted before MPI is entered (maybe waiting there during a
    # checkpoint), the window closed once the call is back and the new communicator, if any,
    # is recorded (enum mana_cc_call in stub.h).
    cc_kind, cc_child = "MANA_CC_COLLECTIVE", "MPI_COMM_NULL"
    if fn.group_coll:
        # A constructor collective over its groups only: counted on an id of the groups'
        # members, the tag and the parent, which every member passes alike.
        groups = [p.name for p in fn.params if p.ctype == "MPI_Group" and p.direction == "in"]
        parent = next((p.name for p in fn.params
                       if p.ctype == "MPI_Comm" and p.direction == "in"), "MPI_COMM_NULL")
        tag = next((p for p in fn.params if p.name in ("tag", "stringtag")), None)
        if not groups or not tag:
            raise ValueError(f"{fn.name}: gcoll needs MPI_Group arguments and a tag")
        tag_expr = (f"mana_string_tag({tag.name})" if tag.name == "stringtag"
                    else f"(uint64_t)(int64_t){tag.name}")
        child = next(p for p in fn.params if p.ctype == "MPI_Comm" and p.direction == "out")
        cc_kind, cc_child = "MANA_CC_CONSTRUCTOR", f"(rc == MPI_SUCCESS ? *{child.name} : MPI_COMM_NULL)"
        # The same id names the new communicator (comm.c, mana_comm_created_in).
        body.insert(0, f"  mana_cc_enter_id(gid_, 1);")
        body.insert(0, f"  const uint64_t gid_ = mana_comm_group_cc_id({parent}, "
                       f"(const MPI_Group[]){{{', '.join(groups)}}}, {len(groups)}, {tag_expr});")
    elif fn.win_coll:
        w = next(p for p in fn.params if p.ctype == "MPI_Win" and p.direction in ("in", "free"))
        arg = f"*{w.name}" if w.direction == "free" else w.name
        body.insert(0, f"  mana_cc_enter_win({arg});")
    elif fn.file_coll:
        fh = next(p for p in fn.params
                  if p.ctype == "MPI_File" and p.direction in ("in", "free"))
        arg = f"({fh.name} ? *{fh.name} : MPI_FILE_NULL)" if fh.direction == "free" else fh.name
        body.insert(0, f"  mana_cc_enter_file({arg});")
    elif fn.coll:
        comm = next(p for p in fn.params
                    if p.ctype == "MPI_Comm" and p.direction in ("in", "free"))
        child = next((p for p in fn.params
                      if p.ctype == "MPI_Comm" and p.direction in ("out", "pending")), None)
        if child:
            cc_kind = ("MANA_CC_NB_CONSTRUCTOR" if child.direction == "pending"
                       else "MANA_CC_CONSTRUCTOR")
            cc_child = f"(rc == MPI_SUCCESS ? *{child.name} : MPI_COMM_NULL)"
        arg = f"({comm.name} ? *{comm.name} : MPI_COMM_NULL)" if comm.direction == "free" else comm.name
        # A persistent collective's initialization makes a clock group of its own, the
        # request, which its starts count on (pcoll.c): counted as a constructor.
        constructor = cc_kind == "MANA_CC_CONSTRUCTOR" or fn.persistent_coll
        # First: a thread held at the entry across a restart must translate its handles
        # after it, not before.
        body.insert(0, f"  mana_cc_enter({arg}, {int(constructor)});")
    # New communicators inherit the error handler of the one they are made from.
    parent = next((p for p in fn.params if p.ctype == "MPI_Comm" and p.direction == "in"), None)
    for p in fn.params:
        if parent and p.ctype == "MPI_Comm" and p.direction in ("out", "pending"):
            after.append(f"    mana_comm_inherit(*{p.name}, {parent.name});")
    # What a new request is, for the drain and the waits (handles.h, MANA_SLOT_REQ_*).
    req_kind = " | ".join(k for k in (request_kind(fn), "MANA_SLOT_REQ_MPIWAIT" if fn.mpiwait else None) if k)
    for p in fn.params:
        if req_kind and p.ctype == "MPI_Request" and p.direction == "out":
            after.append(f"    mana_request_mark((uint32_t)*{p.name}, {req_kind});")
            if fn.mpiwait:
                after.append(f"    mana_req_note_order((uint32_t)*{p.name});")
    # Records for restart: new objects of recorded kinds, then the function's own hook.  An
    # object MPI finishes later must not be queried yet: it is recorded from its parent.
    for p in fn.params:
        if p.direction in ("out", "pending", "shared") and p.kind in RECORDED_KINDS:
            same = next((q for q in fn.params if q.ctype == p.ctype and q.direction == "in"), None)
            source = same.name if same else RECORDED_KINDS[p.kind]
            hook = "created" if p.direction != "pending" else "created_pending"
            if p.direction == "shared":  # recorded when it is new to the application
                after.append(f"    if (made_{p.name})\n      mana_{p.kind.lower()}_{hook}(*{p.name}, {source});")
            elif fn.group_coll and p.kind == "COMM":
                after.append(f"    mana_comm_created_in(*{p.name}, {source}, gid_);")
            else:
                after.append(f"    mana_{p.kind.lower()}_{hook}(*{p.name}, {source});")
    if fn.persistent_coll:
        req = next(p for p in fn.params if p.ctype == "MPI_Request" and p.direction == "out")
        rec = [pcoll_arg(fn, p) for p in fn.params if p is not req]
        after.append("    const struct mana_pcoll_arg pa_[] = {")
        after += [f"        {r}," for r in rec]
        after.append("    };")
        after.append(f"    mana_pcoll_made(*{req.name}, mana_replay_{fn.name}, pa_, {len(rec)});")
    if fn.after:
        after.append(f"    {fn.hook_name()}({', '.join(p.name for p in fn.params)});")
    # An output MPI lets the caller omit (out_opt): nothing is written or recorded through NULL.
    for p in fn.params:
        if p.optional:
            after = [f"    if ({p.name})\n  {a}" if f"*{p.name}" in a else a for a in after]
    # A call that makes, frees or changes handles, or whose record hook runs after it, parks
    # only once the tables and records agree with MPI again (stub.h, MANA_LH_CALL_NOPARK): a
    # rank parked between MPI_Info_set and its record restarted without the key.
    handles = any(p.kind and p.direction in ("out", "pending", "shared", "free", "inout")
                  for p in fn.params)
    nopark = handles or fn.coll or bool(after)
    macro = "MANA_LH_CALL_NOPARK" if nopark else "MANA_LH_CALL"
    if fn.before:
        if fn.ret != "int":
            raise ValueError(f"{fn.name}: `before` needs a wrapper returning int")
        body.insert(0, f"  int before_ = {fn.hook_name('before')}({', '.join(p.name for p in fn.params)});")
        body.insert(1, "  if (before_ != MPI_SUCCESS)")
        body.insert(2, "    return before_;")
    if fn.local:
        # Before anything else: no handle translated, no crossing (the answer is the stub's).
        # Still a park point: a thread whose park signal found it in the stub parks at the
        # end of the call it is in (a loop on MPI_Wtime alone would never park otherwise).
        body[0:0] = [f"  {fn.ret} local_;",
                     f"  if ({fn.hook_name('local')}({', '.join([p.name for p in fn.params] + ['&local_'])})) {{",
                     "    MANA_PARK_CHECK();",
                     "    return local_;",
                     "  }"]
    lines = ([gen_pcoll_replay(fn)] if fn.persistent_coll else [])
    lines += [f"{fn.ret} {fn.name}({fn.proto_args()})", "{"] + body
    # A call whose only bookkeeping is its new request (the non-blocking collectives, the
    # request-based RMA and file operations) makes it before the switch back, where it costs
    # less (stub.h, MANA_LH_CALL_SETTLE); after it only when that could not be done there.
    reqs = [p for p in fn.params if p.ctype == "MPI_Request" and p.direction == "out"]
    early = (nopark and fn.ret == "int" and req_kind and len(reqs) == 1 and
             after == [f"    *{reqs[0].name} = MANA_NEW(REQUEST, MPI_Request, r_{reqs[0].name});",
                       f"    mana_request_mark((uint32_t)*{reqs[0].name}, {req_kind});"])
    if early:
        r = reqs[0].name
        lines.append("  int settled_ = 0;")
        lines.append(f"  int rc = MANA_LH_CALL_SETTLE(settled_, mana_new_request_lower((uint32_t)r_{r}, {r}, "
                     f"{req_kind}), {fn.name}{''.join(', ' + c for c in call)});")
    else:
        lines.append(f"  {fn.ret} rc = {macro}({fn.name}{''.join(', ' + c for c in call)});")
    if after:
        # New handles and records change shared tables: one thread at a time (stub_lock.h).
        lines.append(("  if (rc == MPI_SUCCESS && !settled_) {" if early else "  if (rc == MPI_SUCCESS) {")
                     if fn.ret == "int" else "  {")
        lines.append("    mana_stub_lock_take();")
        lines += after
        lines.append("    mana_stub_lock_give();")
        if failed and fn.ret == "int":
            lines.append("  } else if (rc != MPI_SUCCESS) {" if early else "  } else {")
            lines += failed
        lines.append("  }")
    if fn.coll:
        if fn.ret == "int":
            lines.append("  if (__builtin_expect(rc != MPI_SUCCESS, 0))")
            lines.append("    mana_cc_failed(rc);")
        if fn.persistent_coll:
            req = next(p for p in fn.params if p.ctype == "MPI_Request" and p.direction == "out")
            lines.append(f"  mana_pcoll_init_leave(rc == MPI_SUCCESS ? *{req.name} : MPI_REQUEST_NULL);")
        else:
            lines.append(f"  mana_cc_leave({cc_kind}, {cc_child});")
    lines += cleanup
    if nopark:
        lines.append("  MANA_PARK_CHECK();")
    lines += ["  return rc;", "}", ""]
    return "\n".join(lines)


def gen_hooks_header(funcs):
    out = ["/* Generated by gen_wrappers.py from mpi_api.txt: do not edit. */",
           "/* Hooks, written by hand: an `after` one is called after a successful call with the",
           " * application's arguments (virtual handles; new handles already virtual; records.h),",
           " * a `before` one first, and what it returns other than MPI_SUCCESS is the call's. */",
           "#ifndef MANA_STUB_HOOKS_H", "#define MANA_STUB_HOOKS_H", "#include <mpi.h>", ""]
    for fn in funcs:
        if (fn.after or fn.before) and (fn.custom or fn.ret != "int"):
            raise ValueError(f"{fn.name}: `after` and `before` need a generated wrapper returning int")
        if fn.before:
            out.append(f"int {fn.hook_name('before')}({fn.proto_args()});")
        if fn.after:
            out.append(f"void {fn.hook_name()}({fn.proto_args()});")
        if fn.local:
            if fn.custom:
                raise ValueError(f"{fn.name}: `local` needs a generated wrapper")
            out.append(f"int {fn.hook_name('local')}({fn.local_args()});")
    out += ["", "#endif", ""]
    return "\n".join(out)


def gen_wrappers(funcs):
    out = ["/* Generated by gen_wrappers.py from mpi_api.txt: do not edit. */",
           "#include <stdlib.h>", "#include \"stub.h\"", "#include \"records.h\"",
           "#include \"stub_lock.h\"", "#include \"pcoll.h\"",
           "#include \"stub_hooks.h\"", ""]
    shared, calls = shared_kinds(funcs), shared_calls(funcs)
    for fn in funcs:
        if not fn.custom:
            out.append(gen_wrapper(fn, shared, calls))
    return "\n".join(out)


def gen_aliases(funcs, exported):
    out = ["/* Generated by gen_wrappers.py: each PMPI_ name is its MPI_ twin. */"]
    for fn in funcs:
        if fn.pmpi_name() in exported:
            out.append(f"{fn.pmpi_name()} = {fn.name};")
    return "\n".join(out) + "\n"


def exported_symbols(lib):
    """The dynamic symbols the real library defines (nm -D --defined-only)."""
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True,
                         text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: gen_wrappers.py API_TXT REAL_LIBMPICH OUTDIR")
    api, real_lib, outdir = sys.argv[1:]
    funcs = parse(api)
    exported = exported_symbols(real_lib)
    os.makedirs(outdir, exist_ok=True)
    files = {
        "lh_table.h": gen_table_header(funcs),
        "lh_table_fill.c": gen_table_fill(funcs, exported),
        "stub_wrappers.c": gen_wrappers(funcs),
        "stub_hooks.h": gen_hooks_header(funcs),
        "stub_aliases.ld": gen_aliases(funcs, exported),
        "api_names.txt": "\n".join(f.name for f in funcs) + "\n",
    }
    for name, text in files.items():
        path = os.path.join(outdir, name)
        old = open(path).read() if os.path.exists(path) else None
        if old != text:  # keep timestamps so unchanged outputs do not rebuild
            with open(path, "w") as f:
                f.write(text)


if __name__ == "__main__":
    main()
