#pragma once
// What every Hyperstream algorithm shares with QGIS: the engine's feedback on QGIS's, optional
// outputs, the input raster resolved to a file path, engine errors as QGIS exceptions.

#include "OutputLook.h"
#include "core/Feedback.h"
#include "spectra/SpectralLibrary.h"

#include <qgsprocessingalgorithm.h>
#include <qgsprocessingfeedback.h>
#include <qgsprocessingparameters.h>

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

namespace hyperstream {

// Engine feedback into QGIS's: progress, log, cancel.
class ProcessingFeedback : public Feedback {
 public:
  explicit ProcessingFeedback(QgsProcessingFeedback* feedback) : feedback_(feedback) {}
  void setProgress(double percent) override;
  void log(Level level, const QString& message) override;
  bool isCanceled() const override;

 private:
  QgsProcessingFeedback* feedback_;
};

// The optional outputs of a run beside OUTPUT, resolved on the run's context: the path of each
// the user asked for ("" for the others), and the map of those to return from the run.
class OutputFiles {
 public:
  // `input`: the path of the input the outputs are named after.
  OutputFiles(const QgsProcessingAlgorithm& algorithm, const QVariantMap& parameters,
              QgsProcessingContext& context, const std::string& input)
      : algorithm_(algorithm), parameters_(parameters), context_(context), input_(input) {}
  std::string file(const QString& name);  // a file destination
  // A layer destination, loaded when the run ends, named "<its label> of <input>" (unless the
  // user named it) and styled `style`.
  std::string layer(const QString& name, OutputStyle style = OutputStyle::AsQgisDoes);
  // A class map's layer, its legend the names the run puts into `classNames`.
  std::string classLayer(const QString& name, std::shared_ptr<const QStringList> classNames);
  // A file destination loaded as a table layer when the run ends (where the run has a project
  // to load it into: the dialog's), named as a layer is.
  std::string table(const QString& name);
  const QVariantMap& outputs() const { return outputs_; }

 private:
  std::string asked(const QString& name, const QString& path);
  // The post-processor of output `name`'s layer at `path`, when it is to be loaded.
  void lookAfter(const QString& name, const QString& path, OutputStyle style,
                 std::shared_ptr<const QStringList> classNames = nullptr);

  const QgsProcessingAlgorithm& algorithm_;
  const QVariantMap& parameters_;
  QgsProcessingContext& context_;
  std::string input_;
  QVariantMap outputs_;
};

// Whether a raster parameter's value is a name the engine opens but QGIS does not load from a
// string: a subdataset (NETCDF:"scene.nc":reflectance), a /vsi path, or a sensor's product file
// (an EMIT .nc, a PRISMA .he5). Where QGIS finds no layer by that name, the engine opens and
// checks it.
bool isEngineInputName(const QVariant& value);

// The file behind a raster layer parameter, INPUT by default (a path is used as it is: loading it
// as a layer would make QGIS write a .aux.xml beside the input). Main thread only.
std::string rasterPath(const QgsProcessingAlgorithm& algorithm, const QVariantMap& parameters,
                       QgsProcessingContext& context,
                       const QString& name = QStringLiteral("INPUT"));

// Whether `value` is the path of a file GDAL identifies as a raster (nothing is read but its
// first bytes).
bool isRasterFile(const QVariant& value);

// The file behind a vector or table layer parameter (a path is used as it is), and the layer's
// name in it (a GeoPackage's; empty for a file of one). Main thread only.
struct TableSource {
  std::string path;
  std::string layer;
};
TableSource tableSource(const QgsProcessingAlgorithm& algorithm, const QVariantMap& parameters,
                        QgsProcessingContext& context, const QString& name);

// Spectra given by one of two parameters, as every algorithm that takes them does: a loaded table
// or the endmembers' point layer (`table`), or a spectral library file (`file`, with
// `wavelengths` for USGS spectra). Throws naming `table` when both or neither is given.
struct SpectraSource {
  LibraryFiles files;
  bool fromFile = false;
};
SpectraSource spectraSource(const QgsProcessingAlgorithm& algorithm, const QVariantMap& parameters,
                            QgsProcessingContext& context, const QString& table,
                            const QString& file, const QString& wavelengths);

// CREATION_OPTIONS as NAME=VALUE strings ("A=1|B=2" in the parameter).
std::vector<std::string> creationOptions(const QgsProcessingAlgorithm& algorithm,
                                         const QVariantMap& parameters,
                                         QgsProcessingContext& context);
// checkParameterValues' part for CREATION_OPTIONS: each NAME=VALUE, known to and accepted by the
// GDAL driver of OUTPUT's extension (the engine would refuse them only after reading the input).
bool checkCreationOptionsFor(const QgsProcessingAlgorithm& algorithm, const QVariantMap& parameters,
                             QgsProcessingContext& context, QString* message);

// The value an enum parameter's choice `index` stands for, among `values` (its options, in
// order); the first when out of range.
template <class T>
T chosen(int index, std::initializer_list<T> values) {
  return index >= 0 && static_cast<size_t>(index) < values.size() ? values.begin()[index]
                                                                  : *values.begin();
}

// Runs an engine job, turning its errors into QgsProcessingException "PARAMETER: message".
void runEngineJob(const std::function<void()>& job);
// Runs `job(Feedback&)` on QGIS's feedback, as above, and returns its result.
template <class Job>
auto runEngineJob(QgsProcessingFeedback* feedback, Job job) {
  ProcessingFeedback engineFeedback(feedback);
  decltype(job(engineFeedback)) result;
  runEngineJob([&] { result = job(engineFeedback); });
  return result;
}

}  // namespace hyperstream
