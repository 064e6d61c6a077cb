#include "ConsoleFeedback.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>

namespace hyperstream {

namespace {
std::atomic<bool> interrupted{false};

void onInterrupt(int) {
  interrupted = true;
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the program at once
}
}  // namespace

ConsoleFeedback::ConsoleFeedback(bool quiet) : quiet_(quiet), terminal_(isatty(STDERR_FILENO)) {
  std::signal(SIGINT, onInterrupt);
  std::signal(SIGTERM, onInterrupt);
}

ConsoleFeedback::~ConsoleFeedback() {
  finish();  // an error message after us starts on a clean line
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

bool ConsoleFeedback::isCanceled() const {
  return interrupted;
}

void ConsoleFeedback::setProgress(double percent) {
  QMutexLocker lock(&mutex_);
  const int whole = static_cast<int>(percent);
  if (quiet_ || !terminal_ || whole == shownPercent_) return;
  shownPercent_ = whole;
  drawBar();
}

void ConsoleFeedback::drawBar() {
  constexpr int width = 40;
  const int filled = shownPercent_ * width / 100;
  std::fprintf(stderr, "\r[%s%s] %3d %%", std::string(filled, '#').c_str(),
               std::string(width - filled, ' ').c_str(), shownPercent_);
  std::fflush(stderr);
  barShown_ = true;
}

void ConsoleFeedback::log(Level level, const QString& message) {
  QMutexLocker lock(&mutex_);
  if (quiet_ && level == Level::Info) return;
  if (barShown_) std::fputs("\r\033[K", stderr);
  std::fprintf(stderr, "%s%s\n", level == Level::Warning ? "warning: " : "",
               message.toLocal8Bit().constData());
  if (barShown_) drawBar();
}

void ConsoleFeedback::finish() {
  QMutexLocker lock(&mutex_);
  if (barShown_) std::fputs("\r\033[K", stderr);
  barShown_ = false;
}

}  // namespace hyperstream
