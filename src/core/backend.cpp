// backend: run-mode availability.
#include "core/backend.h"

#include <sys/stat.h>

#include <cstdlib>

namespace pypto {

std::string backend_unavailable_reason(RunMode mode) {
  if (mode == RunMode::kSim) return "";
  const char* home = std::getenv("ASCEND_HOME_PATH");
  struct stat st;
  if (home == nullptr || *home == '\0')
    return "run_mode NPU needs the Ascend CANN toolkit, but ASCEND_HOME_PATH is not set; "
           "use runtime_options={'run_mode': pypto.RunMode.SIM} to run on the CPU simulator";
  if (stat(home, &st) != 0)
    return std::string("run_mode NPU: ASCEND_HOME_PATH='") + home + "' does not exist";
  return std::string("run_mode NPU: CANN found at '") + home +
         "', but this pypto build has no NPU code generator (only the CPU simulator); "
         "use runtime_options={'run_mode': pypto.RunMode.SIM}";
}

}  // namespace pypto
