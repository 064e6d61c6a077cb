#pragma once
// hyperstream:rx and hyperstream:detect, the Processing algorithms around the engine's detection
// jobs (engine/detect/DetectJob.h, ColumnDetectJob.h, LocalRxJob.h), and
// hyperstream:sam around the spectral angle mapper (engine/detect/SamJob.h).

#include "EngineAlgorithm.h"
#include "detect/DetectJob.h"
#include "detect/SamJob.h"
#include "spectra/SpectralLibrary.h"

#include <QStringList>

#include <memory>

namespace hyperstream {

class DetectAlgorithm : public JobAlgorithm<DetectAlgorithm, DetectOptions> {
 public:
  // RX (anomalies, no targets) or target detection (a method and a table of targets).
  enum class Finds { Anomalies, Targets };
  explicit DetectAlgorithm(Finds finds = Finds::Anomalies);
  QgsProcessingAlgorithm* createInstance() const override { return new DetectAlgorithm(finds_); }

 protected:
  bool runsOnSeveralGpus() const override { return true; }
  void addJobParameters() override;
  std::string resolveOutput(OutputFiles& files) override;
  void addJobOutputs() override;
  void prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) override;
  RunReport runJob(OutputFiles& files, QgsProcessingFeedback* feedback) override;

 private:
  void chooseTargets(const QVariantMap& parameters, QgsProcessingContext& context);
  template <class Job>
  auto withTargets(const Job& job);

  Finds finds_;
  LibraryFiles targets_;             // the targets' table or library, read on the worker thread
  bool targetsFromLibrary_ = false;  // TARGET_LIBRARY rather than TARGETS
  bool perColumn_ = false;
  int window_ = 0, guard_ = 1;  // local RX where window_ > 0
};

class SamAlgorithm : public JobAlgorithm<SamAlgorithm, SamOptions> {
 public:
  SamAlgorithm() : JobAlgorithm(QStringLiteral("sam")) {}

 protected:
  void addJobParameters() override;
  std::string resolveOutput(OutputFiles& files) override;
  void addJobOutputs() override;
  void prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) override;
  RunReport runJob(OutputFiles& files, QgsProcessingFeedback* feedback) override;

 private:
  // The library's names, filled by the run, for the class map's legend.
  std::shared_ptr<QStringList> classNames_ = std::make_shared<QStringList>();
  bool libraryFromFile_ = true;  // LIBRARY rather than LIBRARY_TABLE
};

}  // namespace hyperstream
