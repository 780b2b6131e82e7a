// jit_cold: the cold paths of a JitFunction call — slow paths (jit_slow.cpp) and error builders (jit_errors.cpp).
//
// The hit path (jit_call.cpp) only branches here, [[unlikely]]; everything below may allocate, call Python or raise.
// Functions returning PyObject* return NULL with an exception set; bool ones return false with one set.
#pragma once

#include <cstdint>
#include <string>

#include "pypto/dlpack.h"
#include "pypto/kernel_abi.h"
#include "python/jit_state.h"
#include "python/tensor_reader.h"

namespace pypto::py {

// ---- slow paths (jit_slow.cpp)
// Recomputes the default of each parameter from fn.__defaults__ / fn.__kwdefaults__ (reassignable at any time:
// the call path compares their identity).
void refresh_defaults(JitState& st);
// A call site whose layout is not cached: matches keywords (interned pointer first), raises every binding error,
// and remembers the layout for the next call.
[[gnu::noinline]] bool learn_call_shape(JitState& st, Py_ssize_t nargs, PyObject* kwnames);
// A constant parameter's argument that is not the one seen last: its id (0 with an exception set).
[[gnu::noinline]] uint32_t const_id_slow(JitState& st, int c, int pos, PyObject* obj);
// A runtime scalar that is not an exact float/int: converted, or an error.
[[gnu::cold]] bool scalar_slow(JitState& st, int pos, PyObject* obj, PyptoScalarArg* out);
void record_dict_versions(JitState& st);
// Some globals dict changed since its guards were last seen: are the guarded values themselves unchanged?
[[gnu::noinline]] bool guards_unchanged(JitState& st);
// A guarded value changed: keys every guard by value; returns the new guard state.
[[gnu::noinline]] uint32_t guards_slow(JitState& st);
// Miss: asks Python to build the specialization, loads and inserts it. NULL with an exception set, or NULL without
// one when the build stopped early (host_options.compile_stage) and there is nothing to launch.
[[gnu::noinline]] const Specialization* miss(JitState& st, PyObject** slots, const DLTensor* dl, const uint64_t* key,
                                             int n, uint64_t hash);
// Python code ran during the call after tensors were read: reads again every tensor that holds no export (bit not in
// `held`), checks that its key words are unchanged (else an error: the argument changed during the call) and
// refreshes the read-only bits and rs[t].torch (the compile may have made torch.Tensor known). false with an
// exception set.
[[gnu::cold]] bool reread_tensors(JitState& st, PyObject** slots, DLTensor* dl, ReadSlot* rs, uint64_t held,
                                  const uint64_t* key, int n_tensor_words, uint64_t* readonly);
// _probe's result: (hit, key bytes, tensor meta).
[[gnu::cold]] PyObject* probe_result(const JitState& st, bool hit, const uint64_t* key, int n, const DLTensor* dl);

// ---- error builders (jit_errors.cpp)
[[gnu::cold]] PyObject* raise(PyObject* type, const std::string& msg);
[[gnu::cold]] PyObject* raise_pypto(const char* type_name, const std::string& msg);
std::string py_repr(PyObject* o);  // repr, shortened to 80 characters
bool is_tensor_like(PyObject* obj);
[[gnu::cold]] PyObject* bind_error_missing(JitState& st);
[[gnu::cold]] PyObject* tensor_read_error(JitState& st, int t, PyObject* obj, int rc);
[[gnu::cold]] PyObject* tensor_check_error(JitState& st, const DLTensor* dl, PyObject** slots);
[[gnu::cold]] PyObject* scalar_overflow_error(JitState& st, int pos);
[[gnu::cold]] PyObject* readonly_error(JitState& st, uint64_t written_readonly);
// A written tensor partially overlaps another tensor argument (`pair`: core/overlap.h's find_partial_overlap).
[[gnu::cold]] PyObject* overlap_error(JitState& st, int pair);
[[gnu::cold]] PyObject* kernel_error(JitState& st, const char* error);
// A torch tensor the kernel would write that autograd forbids writing in place (why: torch_write_check's code).
[[gnu::cold]] PyObject* autograd_write_error(JitState& st, int t, PyObject* obj, int why);

}  // namespace pypto::py
