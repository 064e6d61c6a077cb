#pragma once
// Engine feedback for tests: records messages, can cancel once progress passes a mark.

#include "core/Feedback.h"

#include <QMutex>
#include <QStringList>

#include <atomic>

class TestFeedback : public hyperstream::Feedback {
 public:
  explicit TestFeedback(double cancelAtPercent = 1e9) : cancelAt_(cancelAtPercent) {}
  void setProgress(double percent) override {
    if (percent >= cancelAt_) canceled_ = true;
    last_ = percent;
  }
  void log(Level level, const QString& message) override {
    QMutexLocker lock(&mutex_);
    (level == Level::Warning ? warnings : infos) << message;
  }
  bool isCanceled() const override { return canceled_; }
  double lastProgress() const { return last_; }

  QStringList warnings, infos;

 private:
  QMutex mutex_;
  double cancelAt_;
  std::atomic<bool> canceled_{false};
  std::atomic<double> last_{0};
};
