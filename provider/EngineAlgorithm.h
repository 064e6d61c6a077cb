#pragma once
// The base of every Hyperstream algorithm, as QGIS's QgsCellStatisticsAlgorithmBase is of its
// own: it declares the parameters every engine job shares (INPUT, BANDS, DEVICE, RAM_MB,
// CREATION_OPTIONS, OUTPUT; the outputs VALID_PIXELS and DEVICE_USED) once, fills the job's common
// options from them, and runs the job the way QGIS needs it run. Each algorithm adds its own
// parameters and outputs, and runs its job. What an algorithm says of itself (names, group, help,
// each parameter's help) lives in texts/NAME.json beside this file, compiled in as a Qt resource.

#include "ProcessingSupport.h"
#include "core/JobOptions.h"

#include <qgsprocessingalgorithm.h>

#include <string>

namespace hyperstream {

class EngineAlgorithm : public QgsProcessingAlgorithm {
 public:
  // What an algorithm says of itself, read from texts/NAME.json.
  struct Texts {
    QString name, displayName, group, groupId;
    QStringList tags;
    QString help;
    QString outputName;                    // OUTPUT's label
    QMap<QString, QString> parameterHelp;  // by parameter name; texts/common.json's first
  };
  explicit EngineAlgorithm(const QString& name);

  QString name() const override { return texts_.name; }
  QString displayName() const override { return texts_.displayName; }
  QString group() const override { return texts_.group; }
  QString groupId() const override { return texts_.groupId; }
  QStringList tags() const override { return texts_.tags; }
  QString shortHelpString() const override { return texts_.help; }
  QIcon icon() const override;
  // The same icon by path: the Model Designer draws its steps from it.
  QString svgIconPath() const override;
  // The algorithm's page in the plugin's help/ folder, when the provider was given one.
  QString helpUrl() const override;
  // INPUT and BANDS, then addJobParameters(), then DEVICE, RAM_MB, CREATION_OPTIONS (raster
  // outputs) and OUTPUT, then addJobOutputs(), then VALID_PIXELS and DEVICE_USED.
  void initAlgorithm(const QVariantMap& configuration = QVariantMap()) final;

 protected:
  // Whether DEVICE offers "All GPUs" (a job split over the machine's GPUs).
  virtual bool runsOnSeveralGpus() const { return false; }
  // Whether INPUT holds spectra, so that EXCLUDE_NM and USE_BBL are offered.
  virtual bool readsSpectra() const { return true; }
  virtual void addJobParameters() = 0;
  // OUTPUT: a raster destination labelled `label`, unless the job writes something else (a table).
  virtual QgsProcessingDestinationParameter* createMainOutput(const QString& label) const;
  // The job's outputs beyond OUTPUT, VALID_PIXELS and DEVICE_USED.
  virtual void addJobOutputs() {}
  // Worker thread: OUTPUT's path on the run's context, a raster loaded when the run ends, or a
  // file.
  virtual std::string resolveOutput(OutputFiles& files);

  // Main thread: the job's own options from `parameters` (the shared ones are set by then).
  virtual void prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) = 0;
  // Before the run: what the engine would refuse only after reading the input (the shared
  // parameters are checked already).
  virtual bool checkJobParameters(const QVariantMap&, QgsProcessingContext&, QString*) const {
    return true;
  }
  // What a run reports: VALID_PIXELS, DEVICE_USED and the job's own outputs.
  struct RunReport {
    int64_t validPixels = 0;
    std::string device;
    QVariantMap values;
  };
  // Worker thread: takes the job's other outputs from `files`, runs the job.
  virtual RunReport runJob(OutputFiles& files, QgsProcessingFeedback* feedback) = 0;
  // The job's options, whose shared part the base fills.
  virtual JobOptions& jobOptions() = 0;

  // addParameter() with the parameter's help from the texts.
  void addDocumented(QgsProcessingParameterDefinition* parameter);
  // An optional file output (statistics, tables, reports) offered unticked unless `offered`.
  void addOptionalFileOutput(const QString& name, const QString& label, const QString& filter,
                             bool offered = false);
  // An optional raster output beside OUTPUT, offered unticked unless `offered`.
  void addOptionalRasterOutput(const QString& name, const QString& label, bool offered = false);

 private:
  // BANDS (or the typed BAND_LIST), EXCLUDE_NM and USE_BBL into `options`; throws Error naming
  // the parameter.
  void readBandSelection(const QVariantMap& parameters, QgsProcessingContext& context,
                         JobOptions& options) const;
  bool prepareAlgorithm(const QVariantMap& parameters, QgsProcessingContext& context,
                        QgsProcessingFeedback* feedback) final;
  bool checkParameterValues(const QVariantMap& parameters, QgsProcessingContext& context,
                            QString* message = nullptr) const final;
  bool checkLayerValues(const QVariantMap& parameters, QgsProcessingContext& context,
                        QString* message) const;
  QVariantMap processAlgorithm(const QVariantMap& parameters, QgsProcessingContext& context,
                               QgsProcessingFeedback* feedback) final;

  Texts texts_;
  bool bandsTyped_ = false;  // this run's bands came as BAND_LIST
};

// An algorithm over the job options `Options`; `Algorithm` is the class deriving from it.
template <class Algorithm, class Options>
class JobAlgorithm : public EngineAlgorithm {
 public:
  using EngineAlgorithm::EngineAlgorithm;
  QgsProcessingAlgorithm* createInstance() const override { return new Algorithm(); }

 protected:
  JobOptions& jobOptions() override { return options_; }
  Options options_;
};

}  // namespace hyperstream
