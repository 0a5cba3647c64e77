// Progress output for long runs: a bar redrawn in place on a terminal, plain
// lines otherwise (logs, CI), on stderr.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>

#include "fhelium/runtime/pipeline.hpp"

namespace fhelium::apps {

class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool enabled) : enabled_(enabled), terminal_(isatty(fileno(stderr)) != 0) {}
  ProgressPrinter(const ProgressPrinter&) = delete;
  ProgressPrinter& operator=(const ProgressPrinter&) = delete;
  ~ProgressPrinter() { finish(); }

  void operator()(const runtime::ProgressEvent& e) {
    if (!enabled_ || e.total == 0) return;
    if (terminal_) {
      constexpr std::size_t width = 30;
      const std::size_t filled = width * e.done / e.total;
      std::fprintf(stderr, "\r\033[K%-7s [%s%s] %zu/%zu %s", e.phase.c_str(), std::string(filled, '#').c_str(),
                   std::string(width - filled, '.').c_str(), e.done, e.total, e.detail.c_str());
      std::fflush(stderr);
      drawn_ = true;
      return;
    }
    // Plain lines: a phase's end, and each quarter of a longer phase.
    const std::size_t quarter = e.total >= 8 ? e.total / 4 : e.total;
    if (e.done == e.total || e.done % quarter == 0) {
      std::fprintf(stderr, "%s %zu/%zu%s%s\n", e.phase.c_str(), e.done, e.total, e.detail.empty() ? "" : " ",
                   e.detail.c_str());
    }
  }

  void finish() {
    if (drawn_) std::fprintf(stderr, "\r\033[K");
    drawn_ = false;
  }

 private:
  bool enabled_;
  bool terminal_;
  bool drawn_ = false;
};

}  // namespace fhelium::apps
