// messages: the shared wording of binding and launch errors.
#include "core/messages.h"

#include <cstring>

#include "core/launch.h"

namespace pypto {

namespace msg {

std::string head(const ParamTable& table) { return "kernel '" + table.kernel + "': "; }

std::string head(const ParamTable& table, int pos) {
  return "kernel '" + table.kernel + "': parameter '" + table.params[pos].name + "': ";
}

std::string too_many_positional(const ParamTable& table, int n_positional, long long given) {
  return head(table) + "takes " + std::to_string(n_positional) + " positional argument(s) but " +
         std::to_string(given) + " were given";
}

std::string missing_arguments(const ParamTable& table, const std::vector<bool>& missing) {
  std::string names;
  for (size_t i = 0; i < table.params.size(); ++i)
    if (missing[i]) names += (names.empty() ? "'" : ", '") + table.params[i].name + "'";
  return head(table) + "missing required argument(s) " + names;
}

std::string unexpected_keyword(const ParamTable& table, const std::string& name) {
  return head(table) + "got an unexpected keyword argument '" + name + "'";
}

std::string multiple_values(const ParamTable& table, int pos) {
  return head(table) + "got multiple values for argument '" + table.params[pos].name + "'";
}

std::string constant_got_tensor(const ParamTable& table, int pos, const std::string& type_name) {
  return head(table, pos) + "is a compile-time constant (no pypto.Tensor annotation), got a tensor (" + type_name +
         "); annotate it as pypto.Tensor(...) to pass a tensor";
}

std::string scalar_wrong_type(const ParamTable& table, int pos, const std::string& type_name) {
  return head(table, pos) + "expected a " + dtype_name(table.params[pos].scalar_dtype) +
         " scalar (pypto.Scalar), got " + type_name;
}

std::string scalar_float_for_integer(const ParamTable& table, int pos, const std::string& repr) {
  return head(table, pos) + "expected an integer for pypto.Scalar[" + dtype_name(table.params[pos].scalar_dtype) +
         "], got float " + repr;
}

}  // namespace msg

std::string kernel_error_message(const std::string& kernel, const char* error) {
  if (std::strncmp(error, "kernel '", 8) == 0) return error;
  return "kernel '" + kernel + "': " + (error[0] ? error : "the kernel reported an error");
}

}  // namespace pypto
