#pragma once
// The base of every Hyperstream algorithm, as QGIS's QgsCellStatisticsAlgorithmBase is of its
// own: it declares the parameters every engine job shares (INPUT, BANDS, DEVICE, RAM_MB,
// CREATION_OPTIONS, OUTPUT) once, fills the job's common options from them, and runs the job the
// way QGIS needs it run. Each algorithm adds its own parameters and outputs, and runs its job.

#include "core/JobOptions.h"

#include <qgsprocessingalgorithm.h>

namespace hyperstream {

class EngineAlgorithm : public QgsProcessingAlgorithm {
 public:
  QIcon icon() const override;
  // INPUT and BANDS, then addJobParameters(), then DEVICE, RAM_MB, CREATION_OPTIONS and OUTPUT,
  // then addJobOutputs().
  void initAlgorithm(const QVariantMap& configuration = QVariantMap()) final;

 protected:
  // What the shared parameters say of this algorithm.
  struct SharedTexts {
    QString bandsHelp;   // BANDS
    QString deviceHelp;  // DEVICE
    QString ramHelp;     // RAM_MB
    QString outputName;  // OUTPUT
    QString outputHelp;
  };
  virtual SharedTexts sharedTexts() const = 0;
  // Whether DEVICE offers "All GPUs" (a job split over the machine's GPUs).
  virtual bool runsOnSeveralGpus() const { return false; }
  virtual void addJobParameters() = 0;
  virtual void addJobOutputs() = 0;

  // Main thread: the job's own options from `parameters` (the shared ones are set by then).
  virtual void prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) = 0;
  // Before the run: what the engine would refuse only after reading the input (the shared
  // parameters are checked already).
  virtual bool checkJobParameters(const QVariantMap&, QgsProcessingContext&, QString*) const {
    return true;
  }
  // Worker thread: resolves the job's other outputs, runs it and returns the outputs but OUTPUT.
  virtual QVariantMap runJob(const QVariantMap& parameters, QgsProcessingContext& context,
                             QgsProcessingFeedback* feedback) = 0;
  // The job's options, whose shared part the base fills.
  virtual JobOptions& jobOptions() = 0;

 private:
  bool prepareAlgorithm(const QVariantMap& parameters, QgsProcessingContext& context,
                        QgsProcessingFeedback* feedback) final;
  bool checkParameterValues(const QVariantMap& parameters, QgsProcessingContext& context,
                            QString* message = nullptr) const final;
  QVariantMap processAlgorithm(const QVariantMap& parameters, QgsProcessingContext& context,
                               QgsProcessingFeedback* feedback) final;
};

}  // namespace hyperstream
