#pragma once
// The base of every Hyperstream algorithm, as QGIS's QgsCellStatisticsAlgorithmBase is of its
// own: it declares the parameters every engine job shares (INPUT, BANDS, DEVICE, RAM_MB,
// CREATION_OPTIONS, OUTPUT) once, fills the job's common options from them, and runs the job the
// way QGIS needs it run. Each algorithm adds its own parameters and outputs, and runs its job.

#include "core/JobOptions.h"

#include <qgsprocessingalgorithm.h>

#include <utility>

namespace hyperstream {

class EngineAlgorithm : public QgsProcessingAlgorithm {
 public:
  // What an algorithm says of itself, and what the shared parameters say of it.
  struct Texts {
    QString name, displayName, group, groupId;
    QString tags;  // comma-separated
    QString help;
    QString bandsHelp;   // BANDS
    QString deviceHelp;  // DEVICE
    QString ramHelp;     // RAM_MB
    QString outputName;  // OUTPUT
    QString outputHelp;
  };
  explicit EngineAlgorithm(Texts texts) : texts_(std::move(texts)) {}

  QString name() const override { return texts_.name; }
  QString displayName() const override { return texts_.displayName; }
  QString group() const override { return texts_.group; }
  QString groupId() const override { return texts_.groupId; }
  QStringList tags() const override { return texts_.tags.split(','); }
  QString shortHelpString() const override { return texts_.help; }
  QIcon icon() const override;
  // INPUT and BANDS, then addJobParameters(), then DEVICE, RAM_MB, CREATION_OPTIONS and OUTPUT,
  // then addJobOutputs().
  void initAlgorithm(const QVariantMap& configuration = QVariantMap()) final;

 protected:
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

  Texts texts_;
};

}  // namespace hyperstream
