#include "cli.hpp"

int main(int argc, char** argv) { return cohsim::cli::main_entry(argc, argv); }
