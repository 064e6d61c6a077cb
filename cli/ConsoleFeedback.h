#pragma once
// Engine feedback on a terminal: a progress bar on stderr when it is a terminal, log lines,
// and Ctrl-C as cancel.

#include "core/Feedback.h"

#include <QMutex>

namespace hyperstream {

class ConsoleFeedback : public Feedback {
 public:
  explicit ConsoleFeedback(bool quiet);
  ~ConsoleFeedback() override;
  void setProgress(double percent) override;
  void log(Level level, const QString& message) override;
  bool isCanceled() const override;
  // Clears the progress bar line.
  void finish();

 private:
  void drawBar();
  QMutex mutex_;
  bool quiet_;
  bool terminal_;
  int shownPercent_ = -1;
  bool barShown_ = false;
};

}  // namespace hyperstream
