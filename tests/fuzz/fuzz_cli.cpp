// libFuzzer target: cli::main_entry with a fuzzed argv (one token per input
// line), restricted by safe_argv to commands that run no simulation and write
// no file; the working directory is a private temporary directory.
#include <streambuf>

#include "tests/fuzz/fuzz_harness.hpp"

namespace {

/// Discards everything written to it (the CLI's tables and help texts).
class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return c; }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  static const cohsim::fuzz::FuzzSandbox box;
  static NullBuffer null_buffer;
  std::filesystem::current_path(box.root());
  std::cout.rdbuf(&null_buffer);
  std::cerr.rdbuf(&null_buffer);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  int code = cohsim::fuzz::run_cli_bytes({reinterpret_cast<const char*>(data), size});
  // An internal error (exit 1 from an unexpected exception) would be hidden
  // by the exit code alone; validate with no rows selected also exits 0.
  if (code != cohsim::cli::kOk && code != cohsim::cli::kBadInput) __builtin_trap();
  return 0;
}
