// libFuzzer target: platform file bytes -> JSON -> scenario::Machine.
// A ConfigError is the expected rejection; anything else is a finding.
#include "tests/fuzz/fuzz_harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const cohsim::fuzz::FuzzSandbox box;
  cohsim::fuzz::load_platform_bytes(box, {reinterpret_cast<const char*>(data), size});
  return 0;
}
