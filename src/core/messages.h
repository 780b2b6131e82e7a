// messages: the binding errors the Python extension and the C++ runtime both raise, worded once.
//
// Every message names the kernel, the parameter and expected vs got (docs/architecture.md, "Rules of the hit
// path"); the two callers pass their own type names and value reprs (Python objects vs runtime::Arg). Cold: built
// only on failure.
#pragma once

#include <string>
#include <vector>

#include "core/param_table.h"

namespace pypto::msg {

// "kernel 'k': "
std::string head(const ParamTable& table);
// "kernel 'k': parameter 'p': " for the parameter at position `pos`
std::string head(const ParamTable& table, int pos);

std::string too_many_positional(const ParamTable& table, int n_positional, long long given);
// `missing[i]`: parameter i has neither an argument nor a default
std::string missing_arguments(const ParamTable& table, const std::vector<bool>& missing);
std::string unexpected_keyword(const ParamTable& table, const std::string& name);
std::string multiple_values(const ParamTable& table, int pos);
// a tensor passed for a compile-time constant; `type_name` is the argument's type
std::string constant_got_tensor(const ParamTable& table, int pos, const std::string& type_name);
// a runtime scalar of the wrong kind
std::string scalar_wrong_type(const ParamTable& table, int pos, const std::string& type_name);
std::string scalar_float_for_integer(const ParamTable& table, int pos, const std::string& repr);

}  // namespace pypto::msg
