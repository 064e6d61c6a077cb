#pragma once
// How the engine talks back to whoever runs it: progress, log messages, cancellation.
// Implementations must be thread-safe: the pipeline calls them from its worker threads.

#include <QString>

namespace hyperstream {

class Feedback {
 public:
  enum class Level { Info, Warning };
  virtual ~Feedback() = default;
  virtual void setProgress(double percent) = 0;
  virtual void log(Level level, const QString& message) = 0;
  virtual bool isCanceled() const = 0;

  void info(const QString& message) { log(Level::Info, message); }
  void warning(const QString& message) { log(Level::Warning, message); }
};

// Feedback that discards everything and never cancels.
class SilentFeedback : public Feedback {
 public:
  void setProgress(double) override {}
  void log(Level, const QString&) override {}
  bool isCanceled() const override { return false; }
};

// Forwards cancel only: the other workers of a job shared by several GPUs report nothing.
class CancelOnly : public Feedback {
 public:
  explicit CancelOnly(Feedback& feedback) : feedback_(feedback) {}
  void setProgress(double) override {}
  void log(Level, const QString&) override {}
  bool isCanceled() const override { return feedback_.isCanceled(); }

 private:
  Feedback& feedback_;
};

}  // namespace hyperstream
