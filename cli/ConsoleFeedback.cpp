#include "ConsoleFeedback.h"

#include "io/PendingFiles.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>

namespace hyperstream {

namespace {
std::atomic<bool> interrupted{false};
std::atomic<bool> quietInterrupt{false};

// First Ctrl-C (or SIGTERM): cancel, which removes the outputs in progress and ends the run. A
// second one ends the program at once, removing those outputs first.
extern "C" void onInterrupt(int signal) {
  if (interrupted.exchange(true)) {
    removePendingFilesNow();
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  if (!quietInterrupt) {
    static const char message[] = "\ncanceling... (press Ctrl-C again to stop at once)\n";
    const ssize_t written = write(STDERR_FILENO, message, sizeof message - 1);
    static_cast<void>(written);  // nothing to do in a signal handler if stderr is gone
  }
}
}  // namespace

ConsoleFeedback::ConsoleFeedback(bool quiet) : quiet_(quiet), terminal_(isatty(STDERR_FILENO)) {
  quietInterrupt = quiet;
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
