#include "cohsim/sim/log.hpp"

#include <cctype>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

namespace cohsim {

namespace {

/// Forwards to stderr the first kShown messages of each shape (logger, level
/// and text with every run of digits masked); counts the others.
class RepeatLimitedSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  static constexpr std::size_t kShown = 3;

  std::string summary() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string out;
    for (const auto& [shape, s] : shapes_)
      if (s.count > kShown)
        out += fmt::format("cohsim: {} more {} like this one not shown (-v shows every one): {}\n", s.count - kShown,
                           s.level == spdlog::level::err ? "errors" : "warnings", s.first);
    shapes_.clear();
    return out;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (msg.level > spdlog::level::debug && spdlog::get_level() > spdlog::level::debug) {
      const std::string text(msg.payload.data(), msg.payload.size());
      Shape& s = shapes_[fmt::format("{}|{}|{}", static_cast<int>(msg.level),
                                     std::string(msg.logger_name.data(), msg.logger_name.size()), masked(text))];
      if (++s.count > kShown) return;
      if (s.count == 1) {
        s.level = msg.level;
        s.first = msg.logger_name.size() > 0 ? fmt::format("[{}] {}", std::string(msg.logger_name.data(), msg.logger_name.size()), text) : text;
      }
    }
    out_->log(msg);
  }
  void flush_() override { out_->flush(); }

 private:
  struct Shape {
    std::size_t count = 0;
    spdlog::level::level_enum level = spdlog::level::warn;
    std::string first;
  };
  static std::string masked(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (std::isdigit(static_cast<unsigned char>(text[i]))) {
        out += '#';
        while (i + 1 < text.size() && (std::isdigit(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '.')) ++i;
      } else {
        out += text[i];
      }
    }
    return out;
  }
  std::shared_ptr<spdlog::sinks::stderr_color_sink_st> out_ = std::make_shared<spdlog::sinks::stderr_color_sink_st>();
  std::map<std::string, Shape> shapes_;  // ordered: the summary lists shapes in a fixed order
};

std::shared_ptr<RepeatLimitedSink> the_sink() {
  static const auto sink = std::make_shared<RepeatLimitedSink>();
  return sink;
}

}  // namespace

std::shared_ptr<spdlog::sinks::sink> log_sink() { return the_sink(); }

std::shared_ptr<spdlog::logger> log(const std::string& component) {
  auto l = spdlog::get(component);
  if (!l) {
    l = std::make_shared<spdlog::logger>(component, log_sink());
    l->set_level(spdlog::get_level());
    spdlog::register_logger(l);
  }
  return l;
}

void route_default_logger() {
  auto l = std::make_shared<spdlog::logger>("", log_sink());
  l->set_level(spdlog::get_level());
  spdlog::set_default_logger(l);
}

std::string repeated_log_summary() { return the_sink()->summary(); }

}  // namespace cohsim
