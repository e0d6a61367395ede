#!/usr/bin/env python3
"""The wrapper generator on a small description: what it emits for each parameter kind."""
import importlib.util
import os
import sys
import tempfile
import unittest

spec = importlib.util.spec_from_file_location("gen", sys.argv.pop(1))
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)

API = """
[test]
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) :: coll
int MPI_Type_free(MPI_Datatype *datatype) :: datatype=free
int MPI_Type_commit(MPI_Datatype *datatype) :: datatype=inout
int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) :: custom
int MPI_Type_create_struct(int count, const int array_of_blocklengths[], const MPI_Aint array_of_displacements[], const MPI_Datatype array_of_types[], MPI_Datatype *newtype) :: array_of_types=in[count]
int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) :: coll sendtypes=in[@comm_size(comm)] recvtypes=in[@comm_size(comm)]
int MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag) :: comm_keyval:keyval
int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh)
double MPI_Wtime(void)
int MPI_Comm_set_name(MPI_Comm comm, const char *comm_name) :: after
int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request) :: coll newcomm=pending
int MPI_Comm_free(MPI_Comm *comm) :: coll comm=free
int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request) :: coll
int MPI_Type_size(MPI_Datatype datatype, int *size)
int MPI_File_write_all(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status) :: fcoll
int MPI_File_iwrite_all(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Request *request) :: mpiwait
int MPI_T_cvar_get_info(int cvar_index, char *name, int *name_len, int *verbosity, MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len, int *bind, int *scope) :: datatype=out_opt
int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler) :: errhandler=shared
int MPI_Win_get_group(MPI_Win win, MPI_Group *group) :: group=shared
int MPI_Group_free(MPI_Group *group) :: group=free
int MPI_T_pvar_reset(MPI_T_pvar_session session, MPI_T_pvar_handle handle) :: session=pvar_session handle=pvar_handle
"""


class Generator(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(API)
        cls.funcs = {fn.name: fn for fn in gen.parse(f.name)}
        os.unlink(f.name)

    def wrapper(self, name):
        return gen.gen_wrapper(self.funcs[name])

    def test_parses_every_entry(self):
        self.assertEqual(len(self.funcs), 22)
        self.assertEqual(self.funcs["MPI_Wtime"].ret, "double")
        self.assertEqual(self.funcs["MPI_Wtime"].params, [])

    def test_default_directions(self):
        split = self.funcs["MPI_Comm_split"]
        self.assertEqual([p.direction for p in split.params], ["in", None, None, "out"])

    def test_collective_enters_clock_before_translating(self):
        w = self.wrapper("MPI_Comm_split")
        # Held at the entry across a restart, a thread must translate its handles afterwards.
        self.assertLess(w.index("mana_cc_enter(comm, 1);"), w.index("MANA_REAL(COMM, MPI_Comm, comm)"))
        self.assertIn("*newcomm = MANA_NEW(COMM, MPI_Comm, r_newcomm);", w)
        # The new communicator joins the clock once it is recorded, before the thread may park.
        self.assertLess(w.index("mana_comm_created("), w.index("mana_cc_leave(MANA_CC_CONSTRUCTOR, (rc == MPI_SUCCESS ? *newcomm"))
        self.assertLess(w.index("mana_cc_leave("), w.index("MANA_PARK_CHECK();"))

    def test_clock_kinds(self):
        self.assertIn("mana_cc_enter(comm, 0);", self.wrapper("MPI_Comm_idup"))
        self.assertIn("mana_cc_leave(MANA_CC_NB_CONSTRUCTOR, (rc == MPI_SUCCESS ? *newcomm", self.wrapper("MPI_Comm_idup"))
        self.assertIn("mana_cc_enter((comm ? *comm : MPI_COMM_NULL), 0);", self.wrapper("MPI_Comm_free"))
        self.assertNotIn("mana_cc_enter", self.wrapper("MPI_Comm_create_group"))
        self.assertIn("mana_cc_leave(MANA_CC_COLLECTIVE, MPI_COMM_NULL);", self.wrapper("MPI_Ibarrier"))
        w = self.wrapper("MPI_File_write_all")
        self.assertLess(w.index("mana_cc_enter_file(fh);"), w.index("MANA_REAL_PTR(FILE, MPI_File, fh)"))
        self.assertIn("mana_cc_leave(MANA_CC_COLLECTIVE, MPI_COMM_NULL);", w)

    def test_free_retires_and_returns_null(self):
        w = self.wrapper("MPI_Type_free")
        self.assertIn("MANA_RETIRE(DATATYPE, MPI_Datatype, *datatype);", w)
        self.assertIn("*datatype = r_datatype;", w)

    def test_null_handle_pointers_reach_mpi(self):
        # MPI reports a null pointer as natively; the wrapper never dereferences it.
        w = self.wrapper("MPI_Comm_split")
        self.assertIn("newcomm ? &r_newcomm : NULL", w)
        self.assertIn("r_newcomm = newcomm ? *newcomm : (MPI_Comm)0;", w)
        w = self.wrapper("MPI_Type_free")
        self.assertIn("datatype ? MANA_REAL(DATATYPE, MPI_Datatype, *datatype) : (MPI_Datatype)0", w)
        self.assertIn("datatype ? &r_datatype : NULL", w)

    def test_failed_constructor_passes_on_the_null_handle(self):
        # MPI_Comm_dup whose copy callback fails gives MPI_COMM_NULL: what MPI leaves in an
        # out handle after a failure reaches the application, unless it is a real object.
        w = self.wrapper("MPI_Comm_split")
        self.assertLess(w.index("} else {"), w.index("MANA_FAILED_OUT(newcomm, r_newcomm);"))
        self.assertIn("MANA_FAILED_OUT_PTR(fh, r_fh);", self.wrapper("MPI_File_open"))
        self.assertNotIn("MANA_FAILED_OUT", self.wrapper("MPI_Type_free"))

    def test_mpiwait_marks_the_new_request(self):
        # Completed by MPI's own wait, not a polling loop (request.c, wait_direct.c).
        self.assertIn("mana_request_mark((uint32_t)*request, MANA_SLOT_REQ_MPIWAIT);",
                      self.wrapper("MPI_File_iwrite_all"))
        self.assertNotIn("MANA_SLOT_REQ_MPIWAIT", self.wrapper("MPI_Ibarrier"))

    def test_a_new_request_alone_is_made_before_the_switch_back(self):
        # Its only bookkeeping: made on the lower half's thread pointer (stub.h,
        # MANA_LH_CALL_SETTLE), by MANA_NEW after the switch only when that could not be done.
        w = self.wrapper("MPI_Ibarrier")
        self.assertIn("int rc = MANA_LH_CALL_SETTLE(settled_, mana_new_request_lower((uint32_t)r_request, "
                      "request, MANA_SLOT_REQ_COLL), MPI_Ibarrier, r_comm, request ? &r_request : NULL);", w)
        self.assertLess(w.index("if (rc == MPI_SUCCESS && !settled_) {"), w.index("MANA_NEW(REQUEST"))
        # A settled request is no failure: MPI's value reaches the application only after one.
        self.assertLess(w.index("} else if (rc != MPI_SUCCESS) {"), w.index("MANA_FAILED_OUT(request"))
        self.assertLess(w.index("MANA_LH_CALL_SETTLE"), w.index("mana_cc_leave("))
        # Anything more to record is done after the switch, as before.
        for name in ("MPI_Comm_idup", "MPI_File_iwrite_all"):
            self.assertNotIn("SETTLE", self.wrapper(name), name)
            self.assertIn("MANA_LH_CALL_NOPARK(" + name, self.wrapper(name), name)

    def test_optional_outputs_are_not_written_through_null(self):
        # MPI_T_cvar_get_info(i, name, &len, NULL, NULL, ...) is valid: MPICH's mpi_t/getindex
        # crashed under mana when the wrapper stored the new datatype through NULL.
        w = self.wrapper("MPI_T_cvar_get_info")
        self.assertIn("datatype ? &r_datatype : NULL", w)
        self.assertIn("    if (datatype)\n      *datatype = MANA_NEW(DATATYPE, MPI_Datatype, r_datatype);", w)
        self.assertIn("    if (datatype)\n      mana_datatype_created(*datatype, MPI_DATATYPE_NULL);", w)
        self.assertNotIn("  *datatype =", w.replace("      *datatype =", ""))

    def test_inout_keeps_the_virtual_handle(self):
        w = self.wrapper("MPI_Type_commit")
        self.assertIn("MANA_UPDATE(DATATYPE, MPI_Datatype, *datatype, r_datatype);", w)
        self.assertNotIn("*datatype =", w)

    def test_handle_arrays_are_translated_with_their_length(self):
        w = self.wrapper("MPI_Type_create_struct")
        self.assertIn("(size_t)(count)", w)
        self.assertIn("mana_real_array_datatype(array_of_types", w)
        w = self.wrapper("MPI_Alltoallw")
        self.assertIn("mana_comm_size(comm)", w)
        # one type array passed for both sides stays one array (MPICH's aliasing check)
        self.assertIn("MPI_Datatype *r_recvtypes = recvtypes == sendtypes ? r_sendtypes : (", w)
        self.assertIn("if (r_recvtypes != s_recvtypes && r_recvtypes != r_sendtypes) free(r_recvtypes);", w)
        self.assertIn("if (r_sendtypes != s_sendtypes) free(r_sendtypes);", w)

    def test_mpi_t_pointers_are_translated_by_their_functions(self):
        # a session is the stub's record (mpi_t.c); a handle may be the ALL_HANDLES sentinel
        w = self.wrapper("MPI_T_pvar_reset")
        self.assertIn("MPI_T_pvar_reset, mana_pvar_session(session), mana_pvar_handle(handle))", w)

    def test_keyvals_and_file_pointers(self):
        self.assertIn("MANA_REAL(KEYVAL, int, comm_keyval)", self.wrapper("MPI_Comm_get_attr"))
        self.assertIn("MANA_NEW_PTR(FILE, MPI_File, r_fh)", self.wrapper("MPI_File_open"))

    def test_custom_functions_get_table_slot_and_alias_only(self):
        out = gen.gen_wrappers(list(self.funcs.values()))
        self.assertNotIn("int MPI_Send(", out)
        self.assertIn("int (*MPI_Send)(", gen.gen_table_header(list(self.funcs.values())))
        aliases = gen.gen_aliases(list(self.funcs.values()), {"PMPI_Send", "PMPI_Wtime"})
        self.assertIn("PMPI_Send = MPI_Send;", aliases)
        self.assertNotIn("PMPI_Type_free", aliases)

    def test_new_objects_of_recorded_kinds_reach_their_record_hook(self):
        w = self.wrapper("MPI_Comm_split")
        self.assertLess(w.index("*newcomm = MANA_NEW(COMM"), w.index("mana_comm_created(*newcomm, comm);"))
        w = self.wrapper("MPI_Type_create_struct")
        self.assertIn("mana_datatype_created(*newtype, MPI_DATATYPE_NULL);", w)
        self.assertNotIn("_created(", self.wrapper("MPI_File_open"), "files are not recorded")

    def test_after_hooks_get_the_application_arguments_on_success(self):
        w = self.wrapper("MPI_Comm_set_name")
        self.assertIn("if (rc == MPI_SUCCESS) {", w)
        self.assertLess(w.index("if (rc == MPI_SUCCESS)"), w.index("mana_after_Comm_set_name(comm, comm_name);"))
        # The record is made before the thread may park: parked between the call and its
        # record, a rank restarted without it (MPICH's info/infodel lost a key).
        self.assertIn("MANA_LH_CALL_NOPARK(MPI_Comm_set_name", w)
        self.assertLess(w.index("mana_after_Comm_set_name(comm, comm_name);"), w.index("MANA_PARK_CHECK();"))
        header = gen.gen_hooks_header(list(self.funcs.values()))
        self.assertIn("void mana_after_Comm_set_name(MPI_Comm comm, const char *comm_name);", header)
        with self.assertRaises(ValueError):
            gen.gen_hooks_header([gen.Function("int MPI_Send(int x) :: custom after", "x")])

    def test_calls_that_change_handles_park_after_recording(self):
        w = self.wrapper("MPI_Comm_split")
        self.assertIn("MANA_LH_CALL_NOPARK(MPI_Comm_split", w)
        self.assertLess(w.index("mana_comm_created("), w.index("MANA_PARK_CHECK();"))
        self.assertIn("MANA_PARK_CHECK();", self.wrapper("MPI_Type_free"))
        w = self.wrapper("MPI_Type_size")
        self.assertIn("MANA_LH_CALL(MPI_Type_size", w, "calls that change no handle park as before")
        self.assertNotIn("MANA_PARK_CHECK", w)
        w = self.wrapper("MPI_Alltoallw")
        self.assertIn("MANA_LH_CALL_NOPARK(MPI_Alltoallw", w, "collectives close the clock first")
        self.assertLess(w.index("mana_cc_leave("), w.index("MANA_PARK_CHECK();"))

    def test_pending_objects_are_recorded_from_their_parent(self):
        w = self.wrapper("MPI_Comm_idup")
        self.assertIn("*newcomm = MANA_NEW(COMM, MPI_Comm, r_newcomm);", w)
        self.assertIn("mana_comm_created_pending(*newcomm, comm);", w)
        self.assertNotIn("mana_comm_created(", w)

    def test_shared_outputs_give_back_the_held_handle(self):
        funcs = list(self.funcs.values())
        shared, calls = gen.shared_kinds(funcs), gen.shared_calls(funcs)
        self.assertEqual(shared, {"ERRHANDLER", "GROUP"})
        w = gen.gen_wrapper(self.funcs["MPI_Win_get_group"], shared, calls)
        # the call and the window it asked, so a restart's stand-in can be recognized
        self.assertIn("*group = (MPI_Group)mana_share32(MANA_KIND_GROUP, (uint32_t)r_group, "
                      "MANA_SHARE_ORIGIN(2, win), &made_group);", w)
        self.assertIn("if (made_group)\n      mana_group_created(*group, MPI_GROUP_NULL);", w)
        self.assertNotIn("MANA_NEW(GROUP", w)
        self.assertIn("MANA_LH_CALL_NOPARK(MPI_Win_get_group", w)
        # a free of a kind handed out again first counts down, and only the last reaches MPI
        f = gen.gen_wrapper(self.funcs["MPI_Group_free"], shared, calls)
        self.assertLess(f.index("if (group && mana_unshare(MANA_KIND_GROUP, (uint32_t)*group)) {"),
                        f.index("MANA_LH_CALL_NOPARK(MPI_Group_free"))
        self.assertIn("*group = MPI_GROUP_NULL;", f)
        t = gen.gen_wrapper(self.funcs["MPI_Type_free"], shared, calls)
        self.assertNotIn("mana_unshare", t)

    def test_shared_needs_a_kind_that_can_give_its_reference_back(self):
        with self.assertRaises(ValueError):
            gen.Function("int MPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used) :: info_used=shared", "x")

    def test_unannotated_handle_array_is_an_error(self):
        with self.assertRaises(ValueError):
            gen.Function("int MPI_Startall(int count, MPI_Request array_of_requests[])", "x")


if __name__ == "__main__":
    unittest.main(verbosity=2)
