// placeholder replaced by the CLI
namespace cohsim::cli {}
