// QGIS tests: the provider registered in a headless QgsApplication, hyperstream:pca run through
// the Processing framework against the engine's own result, errors and cancel.

#include "HyperstreamProvider.h"
#include "ProcessingSupport.h"
#include "ProductFixtures.h"
#include "QgisCompat.h"
#include "TestFeedback.h"
#include "TestSupport.h"
#include "detect/DetectJob.h"
#include "detect/SamJob.h"
#include "io/Raster.h"
#include "pca/PcaJob.h"
#include "spectra/SpectralLibrary.h"
#include "spp/SppJob.h"
#include "synth/Synth.h"

#include <qgsapplication.h>
#include <qgscontrastenhancement.h>
#include <qgsexception.h>
#include <qgsmaplayerstore.h>
#include <qgsnativealgorithms.h>
#include <qgspalettedrasterrenderer.h>
#include <qgspallabeling.h>
#include <qgsprocessingalgorithm.h>
#include <qgsprocessingalgrunnertask.h>
#include <qgsprocessingcontext.h>
#include <qgsprocessingfeedback.h>
#include <qgsprocessingmodelalgorithm.h>
#include <qgsprocessingregistry.h>
#include <qgsprocessingutils.h>
#include <qgsproject.h>
#include <qgsrasterlayer.h>
#include <qgssinglebandgrayrenderer.h>
#include <qgssinglebandpseudocolorrenderer.h>
#include <qgstaskmanager.h>
#include <qgsvectorlayer.h>
#include <qgsvectorlayerlabeling.h>

#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <atomic>
#include <thread>

namespace {

// Collects the errors an algorithm reports.
class RecordingFeedback : public QgsProcessingFeedback {
 public:
  void reportError(const QString& error, bool fatal) override {
    errors << error;
    QgsProcessingFeedback::reportError(error, fatal);
  }
  QStringList errors;
};

QVariantMap runAlgorithm(const QVariantMap& parameters, RecordingFeedback& feedback, bool& ok,
                         const QString& id = "hyperstream:pca") {
  std::unique_ptr<QgsProcessingAlgorithm> algorithm(
      QgsApplication::processingRegistry()->createAlgorithmById(id));
  if (!algorithm) return {};
  QgsProcessingContext context;
  return algorithm->run(parameters, context, &feedback, &ok);
}

// Runs an algorithm as the Processing dialog does: a QgsProcessingAlgRunnerTask on the task
// manager, the outputs as layer definitions to load into `project`, then what the dialog does
// with context.layersToLoadOnCompletion() (processing/gui/Postprocessing.py). Returns the
// sources of the layers that were added to the project.
QStringList runAsTheDialogDoes(const QString& id, QVariantMap parameters,
                               const QStringList& layerOutputs, QgsProject& project, bool& ok) {
  QgsProcessingContext context;
  context.setProject(&project);
  for (const QString& output : layerOutputs)
    parameters[output] = QVariant::fromValue(
        QgsProcessingOutputLayerDefinition(parameters.value(output).toString(), &project));
  std::unique_ptr<QgsProcessingAlgorithm> algorithm(
      QgsApplication::processingRegistry()->createAlgorithmById(id));
  QgsProcessingFeedback feedback;
  bool done = false;
  ok = false;
  auto* task = new QgsProcessingAlgRunnerTask(algorithm.get(), parameters, context, &feedback);
  QObject::connect(task, &QgsProcessingAlgRunnerTask::executed,
                   [&](bool successful, const QVariantMap&) {
                     done = true;
                     ok = successful;
                   });
  QgsApplication::taskManager()->addTask(task);
  QElapsedTimer timer;
  timer.start();
  while (!done && timer.elapsed() < 120000)
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
  const QMap<QString, QgsProcessingContext::LayerDetails> toLoad =
      context.layersToLoadOnCompletion();
  for (auto it = toLoad.begin(); it != toLoad.end(); ++it) {
    QgsMapLayer* layer =
        QgsProcessingUtils::mapLayerFromString(it.key(), context, true, it.value().layerTypeHint);
    if (!layer) continue;
    it.value().setOutputLayerName(layer);
    it.value().project->addMapLayer(context.temporaryLayerStore()->takeMapLayer(layer));
    if (it.value().postProcessor())
      it.value().postProcessor()->postProcessLayer(layer, context, &feedback);
  }
  QStringList sources;
  for (QgsMapLayer* layer : project.mapLayers()) sources << layer->source();
  return sources;
}

// An ENVI spectral library (stem.sli, stem.hdr) of float32 spectra on `wavelengths` (nm).
void writeSpectralLibrary(const QString& stem, const std::vector<double>& wavelengths,
                          const std::vector<hyperstream::Target>& spectra) {
  QStringList names, centres;
  for (const hyperstream::Target& target : spectra) names << QString::fromStdString(target.name);
  for (const double w : wavelengths) centres << QString::number(w, 'g', 17);
  QFile header(stem + ".hdr");
  QVERIFY(header.open(QIODevice::WriteOnly));
  header.write(QString("ENVI\nsamples = %1\nlines = %2\nbands = 1\nheader offset = 0\n"
                       "file type = ENVI Spectral Library\ndata type = 4\ninterleave = bsq\n"
                       "byte order = 0\nwavelength units = Nanometers\n"
                       "spectra names = {%3}\nwavelength = {%4}\n")
                   .arg(wavelengths.size())
                   .arg(spectra.size())
                   .arg(names.join(", "), centres.join(", "))
                   .toUtf8());
  QFile data(stem + ".sli");
  QVERIFY(data.open(QIODevice::WriteOnly));
  for (const hyperstream::Target& target : spectra)
    for (const double value : target.spectrum) {
      const auto sample = static_cast<float>(value);
      data.write(reinterpret_cast<const char*>(&sample), sizeof sample);
    }
}

// dir/pcs.tif (3 components, by the dialog) equals PCA of dir/plain.tif run directly.
void expectSameAsPlainPca(const QString& dir) {
  RecordingFeedback feedback;
  bool ok = false;
  runAlgorithm({{"INPUT", dir + "/plain.tif"}, {"COMPONENTS", 3}, {"OUTPUT", dir + "/ref.tif"}},
               feedback, ok);
  QVERIFY(ok);
  const testing::Cube ours = testing::readCube((dir + "/pcs.tif").toStdString());
  const testing::Cube reference = testing::readCube((dir + "/ref.tif").toStdString());
  QVERIFY(!ours.values.empty() && ours.values == reference.values);
}

}  // namespace

class QgisTests : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QgsApplication::init();
    QgsApplication::initQgis();
    QgsApplication::processingRegistry()->addProvider(new QgsNativeAlgorithms());
    QVERIFY(helpFolder_.isValid());
    QCOMPARE(hyperstream_register(helpFolder_.path().toUtf8().constData()), 1);
  }
  void cleanupTestCase() {
    hyperstream_unregister();
    QVERIFY(!QgsApplication::processingRegistry()->providerById("hyperstream"));
    QgsApplication::exitQgis();
  }

  void providerAndAlgorithm() {
    QgsProcessingProvider* provider =
        QgsApplication::processingRegistry()->providerById("hyperstream");
    QVERIFY(provider);
    QCOMPARE(provider->name(), QString("Hyperstream"));
    const QgsProcessingAlgorithm* algorithm =
        QgsApplication::processingRegistry()->algorithmById("hyperstream:pca");
    QVERIFY(algorithm);
    QCOMPARE(algorithm->displayName(), QString("Principal component analysis"));
    QCOMPARE(algorithm->group(), QString("Dimensionality reduction"));
    for (const QgsProcessingParameterDefinition* parameter : algorithm->parameterDefinitions())
      QVERIFY2(!parameter->help().isEmpty(), qPrintable(parameter->name()));
    for (const char* name : {"DEVICE", "RAM_MB", "CREATION_OPTIONS"})
      QVERIFY(algorithm->parameterDefinition(name)->flags() & hyperstream::compat::kAdvanced);
    // Icons of their own, which render: the provider's and one per algorithm, each different.
    QVERIFY(!provider->icon().pixmap(24, 24).isNull());
    QSet<QByteArray> icons;
    for (const QgsProcessingAlgorithm* each : provider->algorithms()) {
      const QImage image = each->icon().pixmap(24, 24).toImage();
      QVERIFY2(!image.isNull(), qPrintable(each->id()));
      icons << QByteArray(reinterpret_cast<const char*>(image.constBits()),
                          static_cast<int>(image.sizeInBytes()));
      QVERIFY2(QFile::exists(QStringLiteral(":/hyperstream/icons/%1.svg").arg(each->name())),
               qPrintable(each->id()));
    }
    QCOMPARE(icons.size(), provider->algorithms().size());
    // Help: each algorithm's page, written on registering, naming every parameter and output.
    for (const QgsProcessingAlgorithm* each : provider->algorithms()) {
      const QUrl url(each->helpUrl());
      QVERIFY2(url.isLocalFile(), qPrintable(each->id()));
      QFile page(url.toLocalFile());
      QVERIFY2(page.open(QIODevice::ReadOnly), qPrintable(url.toLocalFile()));
      const QString text = QString::fromUtf8(page.readAll());
      QVERIFY(text.contains(each->displayName().toHtmlEscaped()));
      for (const QgsProcessingParameterDefinition* parameter : each->parameterDefinitions())
        QVERIFY2(text.contains("<code>" + parameter->name() + "</code>") &&
                     text.contains(parameter->help().toHtmlEscaped()),
                 qPrintable(each->id() + " " + parameter->name()));
      for (const QgsProcessingOutputDefinition* output : each->outputDefinitions())
        QVERIFY2(text.contains("<code>" + output->name() + "</code>"),
                 qPrintable(each->id() + " " + output->name()));
      // Only CREATION_OPTIONS takes NAME=VALUE options (every text parameter said so once).
      for (const char* name : {"BAND_LIST", "EXCLUDE_NM"}) {
        if (!each->parameterDefinition(name)) continue;  // inversetransform: no wavelengths
        const int row = text.indexOf(QStringLiteral("<tr><td><code>%1</code>").arg(name));
        QVERIFY2(row >= 0, qPrintable(each->id() + " " + name));
        QVERIFY2(!text.mid(row, text.indexOf("</tr>", row) - row).contains("NAME=VALUE"),
                 qPrintable(each->id() + " " + name));
      }
    }
  }

  void sppAlgorithm() {
    const QgsProcessingAlgorithm* algorithm =
        QgsApplication::processingRegistry()->algorithmById("hyperstream:spp");
    QVERIFY(algorithm);
    QCOMPARE(algorithm->displayName(), QString("Spatial preprocessing (SPP)"));
    QCOMPARE(algorithm->group(), QString("Spectral unmixing"));
    for (const char* name :
         {"INPUT", "BANDS", "WINDOW", "BORDER", "OUTPUT_TYPE", "DEVICE", "RAM_MB",
          "CREATION_OPTIONS", "OUTPUT", "OUTPUT_ALPHA", "OUTPUT_RHO"}) {
      const QgsProcessingParameterDefinition* parameter = algorithm->parameterDefinition(name);
      QVERIFY2(parameter && !parameter->help().isEmpty(), name);
    }

    testing::Cube cube = testing::correlatedCube(30, 20, 6, 4);
    testing::roundValues(cube);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Int16);
    RecordingFeedback feedback;
    bool ok = false;
    const QVariantMap results = runAlgorithm({{"INPUT", dir + "/in.tif"},
                                              {"WINDOW", 7},
                                              {"BORDER", 1},
                                              {"CREATION_OPTIONS", "COMPRESS=DEFLATE"},
                                              {"OUTPUT", dir + "/qgis.tif"},
                                              {"OUTPUT_ALPHA", dir + "/alpha.tif"}},
                                             feedback, ok, "hyperstream:spp");
    QVERIFY2(ok, qPrintable(feedback.errors.join('\n')));
    for (const char* output : {"OUTPUT", "OUTPUT_ALPHA"}) {  // creation options reach every output
      const hyperstream::DatasetPtr written =
          hyperstream::openRaster(results.value(output).toString().toStdString(), "");
      QCOMPARE(QString(written->GetMetadataItem("COMPRESSION", "IMAGE_STRUCTURE")),
               QString("DEFLATE"));
    }
    QCOMPARE(results.value("VALID_PIXELS").toDouble(), 600.0);
    QVERIFY(results.value("MEAN_ALPHA").toDouble() > 0);
    QVERIFY(results.value("DEVICE_USED").toString().startsWith("cpu"));
    QVERIFY(QFile::exists(results.value("OUTPUT_ALPHA").toString()));
    QVERIFY(!results.contains("OUTPUT_RHO"));

    hyperstream::SppOptions options;
    options.input = (dir + "/in.tif").toStdString();
    options.output = (dir + "/engine.tif").toStdString();
    options.window = 7;
    options.border = hyperstream::SppBorder::Mirror;
    options.noiseAdjusted = true;  // QGIS's default
    TestFeedback engineFeedback;
    hyperstream::runSpp(options, engineFeedback);
    QCOMPARE(testing::readCube(results.value("OUTPUT").toString().toStdString()).values,
             testing::readCube(options.output).values);

    runAlgorithm({{"INPUT", dir + "/in.tif"}, {"WINDOW", 4}, {"OUTPUT", dir + "/bad.tif"}},
                 feedback, ok, "hyperstream:spp");
    QVERIFY(!ok);
    QVERIFY2(feedback.errors.join('\n').contains("WINDOW"), qPrintable(feedback.errors.join('\n')));
    QVERIFY(!QFile::exists(dir + "/bad.tif"));
  }

  // COMPONENTS 0 counts by the signal subspace for denoise and MNF (COUNT_RULE's default), by
  // 99 % for PCA, which still reports HySime's estimate; the share's label says what it is a
  // share of.
  void defaultCountIsTheSignalSubspace() {
    const QString dir = testing::tempDir();
    hyperstream::SynthOptions synth;
    synth.output = (dir + "/scene.tif").toStdString();
    synth.rows = synth.cols = 120;
    TestFeedback engineFeedback;
    hyperstream::synthesizeScene(synth, engineFeedback);
    RecordingFeedback feedback;
    bool ok = false;
    for (const char* id : {"hyperstream:denoise", "hyperstream:mnf", "hyperstream:pca"}) {
      const QVariantMap results = runAlgorithm(
          {{"INPUT", dir + "/scene.tif"}, {"OUTPUT", dir + "/" + QString(id).mid(12) + ".tif"}},
          feedback, ok, id);
      QVERIFY2(ok, qPrintable(feedback.errors.join('\n')));
      QCOMPARE(results.value("SIGNAL_DIMENSION").toInt(), 5);
      QCOMPARE(results.value("N_COMPONENTS").toInt(), QString(id) == "hyperstream:pca" ? 2 : 5);
    }
    const QVariantMap chosen = runAlgorithm(
        {{"INPUT", dir + "/scene.tif"}, {"COUNT_RULE", 0}, {"OUTPUT", dir + "/pca5.tif"}}, feedback,
        ok);
    QCOMPARE(chosen.value("N_COMPONENTS").toInt(), 5);
    // Endmembers: COUNT 0 (the default) finds as many.
    const QVariantMap endmembers =
        runAlgorithm({{"INPUT", dir + "/scene.tif"}, {"OUTPUT", dir + "/em.csv"}}, feedback, ok,
                     "hyperstream:endmembers");
    QVERIFY2(ok, qPrintable(feedback.errors.join('\n')));
    QFile table(endmembers.value("OUTPUT").toString());
    QVERIFY(table.open(QIODevice::ReadOnly));
    QCOMPARE(QString(table.readAll()).trimmed().split('\n').size(), 1 + 5);
    const QgsProcessingAlgorithm* mnf =
        QgsApplication::processingRegistry()->algorithmById("hyperstream:mnf");
    QCOMPARE(mnf->parameterDefinition("VARIANCE")->description(),
             QString("Cumulative share of the summed SNR (%)"));
  }

  // Errors name what the user gave: BAND_LIST when the bands were typed, STATS when applied
  // statistics need bands the image lacks, COMPONENTS before the image is read.
  // Clicking Run checks a raster given by its path without loading it as a layer on the GUI
  // thread (QGIS would, estimating its statistics: 2.2 s for a 1.1 GB DEFLATE GeoTIFF).
  void runChecksPathsWithoutLoadingThem() {
    testing::Cube cube = testing::correlatedCube(20, 30, 6, 9);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float32);
    std::unique_ptr<QgsProcessingAlgorithm> algorithm(
        QgsApplication::processingRegistry()->createAlgorithmById("hyperstream:pca"));
    QgsProcessingContext context;
    QString message;
    QVERIFY(algorithm->checkParameterValues(
        {{"INPUT", dir + "/in.tif"}, {"OUTPUT", dir + "/out.tif"}}, context, &message));
    QCOMPARE(context.temporaryLayerStore()->count(), 0);
    QVERIFY(!algorithm->checkParameterValues(
        {{"INPUT", dir + "/none.tif"}, {"OUTPUT", dir + "/out.tif"}}, context, &message));
  }

  // Two runs into one project: layers named after the algorithm's output and the input, the
  // second one numbered.
  void layerNamesAreUniqueAcrossRuns() {
    testing::Cube cube = testing::correlatedCube(20, 30, 6, 9);
    testing::roundValues(cube);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/flight.tif").toStdString(), GDT_UInt16);
    QgsProject project;
    bool ok = false;
    for (const char* out : {"/one.tif", "/two.tif"}) {
      runAsTheDialogDoes("hyperstream:pca",
                         {{"INPUT", dir + "/flight.tif"}, {"COMPONENTS", 2}, {"OUTPUT", dir + out}},
                         {"OUTPUT"}, project, ok);
      QVERIFY(ok);
    }
    QCOMPARE(project.mapLayersByName("Principal components of flight").size(), 1);
    QCOMPARE(project.mapLayersByName("Principal components of flight (2)").size(), 1);
  }

  // Defaults that keep what the next step needs: statistics and reports written (temporary
  // files unless named), the abundances' RMSE, SPP noise-adjusted as the shipped model runs it.
  void defaultsOfferWhatComesNext() {
    auto offered = [](const char* id, const char* output) {
      const auto* parameter = dynamic_cast<const QgsProcessingDestinationParameter*>(
          QgsApplication::processingRegistry()->algorithmById(id)->parameterDefinition(output));
      return parameter && parameter->createByDefault();
    };
    for (const char* id : {"hyperstream:pca", "hyperstream:mnf", "hyperstream:denoise"}) {
      QVERIFY2(offered(id, "OUTPUT_STATS"), id);
      QVERIFY2(offered(id, "OUTPUT_HTML_FILE"), id);
    }
    QVERIFY(offered("hyperstream:endmembers", "OUTPUT_HTML_FILE"));
    QVERIFY(offered("hyperstream:abundances", "OUTPUT_HTML_FILE"));
    QVERIFY(offered("hyperstream:abundances", "OUTPUT_RMSE"));
    QCOMPARE(QgsApplication::processingRegistry()
                 ->algorithmById("hyperstream:spp")
                 ->parameterDefinition("NOISE_ADJUSTED")
                 ->defaultValue()
                 .toBool(),
             true);
  }

  // Cosmetics the user sees: two decimals for shares and SNRs; no wavelength choices for a
  // component raster.
  void dialogsShowWhatFits() {
    const QgsProcessingAlgorithm* pca =
        QgsApplication::processingRegistry()->algorithmById("hyperstream:pca");
    QCOMPARE(pca->parameterDefinition("VARIANCE")
                 ->metadata()
                 .value("widget_wrapper")
                 .toMap()
                 .value("decimals")
                 .toInt(),
             2);
    const QgsProcessingAlgorithm* inverse =
        QgsApplication::processingRegistry()->algorithmById("hyperstream:inversetransform");
    QVERIFY(!inverse->parameterDefinition("EXCLUDE_NM"));
    QVERIFY(!inverse->parameterDefinition("USE_BBL"));
    QVERIFY(pca->parameterDefinition("EXCLUDE_NM"));
  }

  void errorsNameWhatTheUserGave() {
    const QString dir = testing::tempDir();
    testing::Cube cube = testing::correlatedCube(20, 30, 8, 5);
    testing::roundValues(cube);
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_UInt16);
    cube.bands = 6;
    cube.values.resize(static_cast<size_t>(cube.pixels()) * 6);
    cube.nodata.resize(6);
    testing::writeCube(cube, (dir + "/six.tif").toStdString(), GDT_UInt16);
    RecordingFeedback feedback;
    bool ok = true;
    const auto failure = [&](const QVariantMap& parameters, const QString& id) {
      feedback.errors.clear();
      runAlgorithm(parameters, feedback, ok, id);
      return feedback.errors.join('\n');
    };
    QString error =
        failure({{"INPUT", dir + "/in.tif"}, {"BAND_LIST", "1-300"}, {"OUTPUT", dir + "/a.tif"}},
                "hyperstream:pca");
    QVERIFY2(!ok && error.contains("BAND_LIST: band 300 does not exist"), qPrintable(error));
    error = failure({{"INPUT", dir + "/in.tif"}, {"COMPONENTS", 500}, {"OUTPUT", dir + "/b.tif"}},
                    "hyperstream:pca");
    QVERIFY2(!ok && error.contains("COMPONENTS: asks for 500 components, but only 8 bands"),
             qPrintable(error));
    runAlgorithm({{"INPUT", dir + "/in.tif"},
                  {"COMPONENTS", 3},
                  {"OUTPUT", dir + "/c.tif"},
                  {"OUTPUT_STATS", dir + "/c.json"}},
                 feedback, ok, "hyperstream:pca");
    QVERIFY(ok);
    error = failure(
        {{"INPUT", dir + "/six.tif"}, {"STATS", dir + "/c.json"}, {"OUTPUT", dir + "/d.tif"}},
        "hyperstream:applytransform");
    QVERIFY2(!ok && error.contains("STATS: the saved transform was fitted on 8 bands"),
             qPrintable(error));
  }

  void runMatchesTheEngine() {
    testing::Cube cube = testing::correlatedCube(40, 50, 8, 3);
    testing::roundValues(cube);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_UInt16);
    RecordingFeedback feedback;
    bool ok = false;
    const QVariantMap results = runAlgorithm({{"INPUT", dir + "/in.tif"},
                                              {"COMPONENTS", 3},
                                              {"OUTPUT", dir + "/qgis.tif"},
                                              {"OUTPUT_STATS", dir + "/qgis.json"},
                                              {"OUTPUT_HTML_FILE", dir + "/qgis.html"},
                                              {"CREATION_OPTIONS", "COMPRESS=DEFLATE"}},
                                             feedback, ok);
    QVERIFY2(ok, qPrintable(feedback.errors.join('\n')));
    QCOMPARE(results.value("N_COMPONENTS").toInt(), 3);
    QCOMPARE(results.value("VALID_PIXELS").toDouble(), 2000.0);
    QVERIFY(results.value("VARIANCE_EXPLAINED").toDouble() > 0);
    QVERIFY(results.value("DEVICE_USED").toString().startsWith("cpu"));
    QVERIFY(QFile::exists(results.value("OUTPUT_STATS").toString()));
    QVERIFY2(QFile::exists(results.value("OUTPUT_HTML_FILE").toString()),
             qPrintable(results.value("OUTPUT_HTML_FILE").toString() + " keys " +
                        results.keys().join(",")));

    hyperstream::PcaOptions options;
    options.input = (dir + "/in.tif").toStdString();
    options.output = (dir + "/engine.tif").toStdString();
    options.components = 3;
    TestFeedback engineFeedback;
    hyperstream::runPca(options, engineFeedback);
    QCOMPARE(testing::readCube(results.value("OUTPUT").toString().toStdString()).values,
             testing::readCube(options.output).values);
  }

  // The dialog runs algorithms as a background task and loads the layers the run registered on
  // the worker's context: outputs resolved before (in prepareAlgorithm) were never loaded.
  void dialogRunsLoadTheirOutputs() {
    testing::Cube cube = testing::correlatedCube(30, 40, 6, 5);
    testing::roundValues(cube);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Int16);
    QgsProject project;
    bool ok = false;
    QStringList loaded = runAsTheDialogDoes(
        "hyperstream:pca",
        {{"INPUT", dir + "/in.tif"}, {"COMPONENTS", 2}, {"OUTPUT", dir + "/pcs.tif"}}, {"OUTPUT"},
        project, ok);
    QVERIFY(ok);
    QCOMPARE(loaded, QStringList{dir + "/pcs.tif"});
    loaded = runAsTheDialogDoes("hyperstream:spp",
                                {{"INPUT", dir + "/in.tif"},
                                 {"OUTPUT", dir + "/spp.tif"},
                                 {"OUTPUT_ALPHA", dir + "/alpha.tif"}},
                                {"OUTPUT", "OUTPUT_ALPHA"}, project, ok);
    QVERIFY(ok);
    loaded.sort();
    QCOMPARE(loaded, QStringList({dir + "/alpha.tif", dir + "/pcs.tif", dir + "/spp.tif"}));
    for (QgsMapLayer* layer : project.mapLayers()) QVERIFY(layer->isValid());
  }

  // A subdataset loaded as a layer (as QGIS offers a netCDF file's arrays) is the dialog's INPUT:
  // its components load and equal those of the same cube as a plain GeoTIFF; the container is
  // not written.
  void subdatasetLayerFromTheDialog() {
    if (!GetGDALDriverManager()->GetDriverByName("netCDF")) QSKIP("GDAL without netCDF");
    testing::Cube cube = testing::correlatedCube(30, 40, 8, 36, 3000.0, 300.0);
    testing::roundValues(cube);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/plain.tif").toStdString(), GDT_UInt16);
    testing::writeNetcdfCube(cube, (dir + "/scene.nc").toStdString());
    QFile container(dir + "/scene.nc");
    QVERIFY(container.open(QIODevice::ReadOnly));
    const QByteArray before = container.readAll();
    container.close();
    QgsProject project;
    auto* layer =
        new QgsRasterLayer("NETCDF:\"" + dir + "/scene.nc\":reflectance", "reflectance", "gdal");
    QVERIFY(layer->isValid());
    project.addMapLayer(layer);
    bool ok = false;
    const QStringList loaded = runAsTheDialogDoes(
        "hyperstream:pca",
        {{"INPUT", layer->id()}, {"COMPONENTS", 3}, {"OUTPUT", dir + "/pcs.tif"}}, {"OUTPUT"},
        project, ok);
    QVERIFY(ok);
    QVERIFY(loaded.contains(dir + "/pcs.tif"));
    expectSameAsPlainPca(dir);
    QVERIFY(container.open(QIODevice::ReadOnly));
    QCOMPARE(container.readAll(), before);
  }

  // A product file typed or browsed as INPUT (QGIS cannot load an EMIT .nc or a PRISMA .he5 as a
  // layer): EMIT with ORTHORECTIFY loads on the GLT's map grid; PRISMA equals the plain GeoTIFF of
  // its expected cube.
  void productFilesFromTheDialog() {
    if (!GetGDALDriverManager()->GetDriverByName("netCDF") ||
        !GetGDALDriverManager()->GetDriverByName("HDF5"))
      QSKIP("GDAL without netCDF or HDF5");
    const QString dir = testing::tempDir();
    const QString emitFile = dir + "/EMIT_L2A_RFL_001_20230801T200000_2321313_007.nc";
    testing::writeEmit(emitFile.toStdString(), 30, 40, 371);
    QgsProject project;
    bool ok = false;
    QStringList loaded = runAsTheDialogDoes("hyperstream:pca",
                                            {{"INPUT", emitFile},
                                             {"COMPONENTS", 3},
                                             {"ORTHORECTIFY", true},
                                             {"OUTPUT", dir + "/map.tif"}},
                                            {"OUTPUT"}, project, ok);
    QVERIFY(ok);
    QVERIFY(loaded.contains(dir + "/map.tif"));
    const QgsRasterLayer map(dir + "/map.tif", "map", "gdal");
    QVERIFY(map.isValid());
    QCOMPARE(map.crs().authid(), QString("EPSG:4326"));
    QCOMPARE(int64_t{map.width()}, testing::emitGlt(30, 40).width);

    const QString prisma = dir + "/PRS_L2D_STD_20200627102358_20200627102402_0002.he5";
    const testing::Product product = testing::writePrisma(prisma.toStdString(), 30, 40, 372);
    testing::writeCube(product.expected, (dir + "/plain.tif").toStdString(), GDT_Float32);
    loaded = runAsTheDialogDoes(
        "hyperstream:pca", {{"INPUT", prisma}, {"COMPONENTS", 3}, {"OUTPUT", dir + "/pcs.tif"}},
        {"OUTPUT"}, project, ok);
    QVERIFY(ok);
    QVERIFY(loaded.contains(dir + "/pcs.tif"));
    expectSameAsPlainPca(dir);
  }

  // hyperstream:mnf from the dialog (its output loads), and the same run equals the engine's.
  void mnfFromTheDialog() {
    testing::Cube cube = testing::correlatedCube(40, 36, 7, 8);
    testing::roundValues(cube);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_UInt16);
    const QgsProcessingAlgorithm* algorithm =
        QgsApplication::processingRegistry()->algorithmById("hyperstream:mnf");
    QVERIFY(algorithm);
    QCOMPARE(algorithm->displayName(), QString("Minimum noise fraction (MNF)"));
    QVERIFY(!algorithm->parameterDefinition("MATRIX"));
    for (const QgsProcessingParameterDefinition* parameter : algorithm->parameterDefinitions())
      QVERIFY2(!parameter->help().isEmpty(), qPrintable(parameter->name()));
    QgsProject project;
    bool ok = false;
    const QStringList loaded = runAsTheDialogDoes("hyperstream:mnf",
                                                  {{"INPUT", dir + "/in.tif"},
                                                   {"COMPONENTS", 3},
                                                   {"NOISE_DIRECTION", 2},
                                                   {"OUTPUT", dir + "/mnf.tif"},
                                                   {"OUTPUT_STATS", dir + "/mnf.json"}},
                                                  {"OUTPUT"}, project, ok);
    QVERIFY(ok);
    QCOMPARE(loaded, QStringList{dir + "/mnf.tif"});
    for (QgsMapLayer* layer : project.mapLayers()) QVERIFY(layer->isValid());

    // Its transform applied to the same image: the same file, bit for bit.
    QgsProject applied;
    const QStringList appliedLayers = runAsTheDialogDoes("hyperstream:applytransform",
                                                         {{"INPUT", dir + "/in.tif"},
                                                          {"STATS", dir + "/mnf.json"},
                                                          {"OUTPUT", dir + "/applied.tif"}},
                                                         {"OUTPUT"}, applied, ok);
    QVERIFY(ok);
    QCOMPARE(appliedLayers, QStringList{dir + "/applied.tif"});
    QFile fitted(dir + "/mnf.tif"), again(dir + "/applied.tif");
    QVERIFY(fitted.open(QIODevice::ReadOnly) && again.open(QIODevice::ReadOnly));
    QVERIFY(fitted.readAll() == again.readAll());
    hyperstream::PcaOptions options;
    options.input = (dir + "/in.tif").toStdString();
    options.output = (dir + "/engine.tif").toStdString();
    options.noise = hyperstream::NoiseDirection::Right;
    options.components = 3;
    TestFeedback engineFeedback;
    const hyperstream::PcaResult result = hyperstream::runPca(options, engineFeedback);
    QCOMPARE(result.model.transform, hyperstream::Transform::Mnf);
    const testing::Cube fromQgis = testing::readCube((dir + "/mnf.tif").toStdString());
    const testing::Cube fromEngine = testing::readCube(options.output);
    QCOMPARE(fromQgis.bands, 3);
    for (size_t i = 0; i < fromQgis.values.size(); ++i)
      QVERIFY(std::abs(fromQgis.values[i] - fromEngine.values[i]) <=
              1e-4 * std::abs(fromEngine.values[i]) + 1e-6);
  }

  // hyperstream:denoise and hyperstream:inversetransform from the dialog: their outputs load, in
  // the input's type; the denoised image is the engine's, and the inverse of every Float64
  // component is the input.
  void denoiseAndInverseFromTheDialog() {
    testing::Cube cube = testing::smoothScene(42, 37, 8, 6);
    testing::roundValues(cube);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_UInt16);
    for (const char* id : {"hyperstream:denoise", "hyperstream:inversetransform"}) {
      const QgsProcessingAlgorithm* algorithm =
          QgsApplication::processingRegistry()->algorithmById(id);
      QVERIFY2(algorithm, id);
      for (const QgsProcessingParameterDefinition* parameter : algorithm->parameterDefinitions())
        QVERIFY2(!parameter->help().isEmpty(), qPrintable(parameter->name()));
    }
    QgsProject project;
    bool ok = false;
    QStringList loaded = runAsTheDialogDoes("hyperstream:denoise",
                                            {{"INPUT", dir + "/in.tif"},
                                             {"TRANSFORM", 1},
                                             {"COMPONENTS", 4},
                                             {"OUTPUT", dir + "/denoised.tif"}},
                                            {"OUTPUT"}, project, ok);
    QVERIFY(ok);
    QCOMPARE(loaded, QStringList{dir + "/denoised.tif"});
    for (QgsMapLayer* layer : project.mapLayers()) QVERIFY(layer->isValid());
    hyperstream::PcaOptions options;
    options.input = (dir + "/in.tif").toStdString();
    options.output = (dir + "/engine.tif").toStdString();
    options.noise = hyperstream::NoiseDirection::LowerRight;
    options.components = 4;
    options.outputType = hyperstream::OutputType::SameAsInput;
    TestFeedback engineFeedback;
    hyperstream::runDenoise(options, engineFeedback);
    const testing::Cube fromQgis = testing::readCube((dir + "/denoised.tif").toStdString());
    const testing::Cube fromEngine = testing::readCube(options.output);
    QCOMPARE(fromQgis.bands, 8);
    for (size_t i = 0; i < fromQgis.values.size(); ++i)  // BLAS inside QGIS may differ in ulps
      QVERIFY(std::abs(fromQgis.values[i] - fromEngine.values[i]) <= 1);

    QgsProject inverted;
    runAsTheDialogDoes("hyperstream:pca",
                       {{"INPUT", dir + "/in.tif"},
                        {"COMPONENTS", 8},
                        {"OUTPUT_TYPE", 1},
                        {"OUTPUT", dir + "/pcs.tif"},
                        {"OUTPUT_STATS", dir + "/pcs.json"}},
                       {"OUTPUT"}, inverted, ok);
    QVERIFY(ok);
    loaded = runAsTheDialogDoes("hyperstream:inversetransform",
                                {{"INPUT", dir + "/pcs.tif"},
                                 {"STATS", dir + "/pcs.json"},
                                 {"OUTPUT", dir + "/inverse.tif"}},
                                {"OUTPUT"}, inverted, ok);
    QVERIFY(ok);
    QVERIFY(loaded.contains(dir + "/inverse.tif"));
    for (QgsMapLayer* layer : inverted.mapLayers()) QVERIFY(layer->isValid());
    QCOMPARE(testing::readCube((dir + "/inverse.tif").toStdString()).values, cube.values);
  }

  // Every shipped model opens valid in the Model Designer (each mandatory parameter of each child
  // set) and laid out (no two items at one place).
  void shippedModelsAreValidAndLaidOut() {
    const QDir data(QStringLiteral(HYPERSTREAM_SOURCE_DIR "/tests/data"));
    const QStringList models = data.entryList({"*.model3"});
    QVERIFY(models.size() >= 2);
    for (const QString& name : models) {
      QgsProcessingModelAlgorithm model;
      QVERIFY2(model.fromFile(data.filePath(name)), qPrintable(name));
      QStringList issues;
      QVERIFY2(model.validate(issues), qPrintable(name + ": " + issues.join('\n')));
      QList<QPointF> places;
      for (const QgsProcessingModelChildAlgorithm& child : model.childAlgorithms()) {
        places << child.position();
        for (const QgsProcessingModelOutput& output : child.modelOutputs())
          places << output.position();
      }
      for (const QgsProcessingModelParameter& input : model.parameterComponents())
        places << input.position();
      for (int i = 0; i < places.size(); ++i)
        for (int j = i + 1; j < places.size(); ++j)
          QVERIFY2(places[i] != places[j], qPrintable(name + ": two items at one place"));
    }
  }

  // Detection from the dialog: endmembers found in a scene, then the matched filter of each
  // (TARGETS picked from the layer list), RX and the spectral angle mapper; the score rasters
  // load, named and on a ramp, the class map in the library's colours, and they hold what the
  // engine writes.
  void detectionFromTheDialog() {
    for (const char* id : {"hyperstream:rx", "hyperstream:detect", "hyperstream:sam"}) {
      const QgsProcessingAlgorithm* algorithm =
          QgsApplication::processingRegistry()->algorithmById(id);
      QVERIFY2(algorithm, id);
      QCOMPARE(algorithm->group(), QString("Target detection"));
      QVERIFY(algorithm->svgIconPath().endsWith(QString(id).mid(12) + ".svg"));
    }
    const QString dir = testing::tempDir();
    hyperstream::SynthOptions synth;
    synth.output = (dir + "/scene.tif").toStdString();
    synth.rows = synth.cols = 60;
    synth.bands = 30;
    synth.endmembers = 3;
    synth.purePatch = 4;
    TestFeedback synthFeedback;
    hyperstream::synthesizeScene(synth, synthFeedback);
    QgsProject project;
    bool ok = false;
    runAsTheDialogDoes("hyperstream:endmembers",
                       {{"INPUT", dir + "/scene.tif"}, {"COUNT", 3}, {"OUTPUT", dir + "/em.csv"}},
                       {}, project, ok);
    QVERIFY(ok);
    const QgsMapLayer* table = nullptr;
    for (QgsMapLayer* layer : project.mapLayers())
      if (layer->source().startsWith(dir + "/em.csv")) table = layer;
    QVERIFY(table && table->isValid());
    QStringList loaded = runAsTheDialogDoes(
        "hyperstream:detect",
        {{"INPUT", dir + "/scene.tif"}, {"TARGETS", table->id()}, {"OUTPUT", dir + "/mf.tif"}},
        {"OUTPUT"}, project, ok);
    QVERIFY(ok);
    QVERIFY(loaded.contains(dir + "/mf.tif"));
    loaded = runAsTheDialogDoes("hyperstream:rx",
                                {{"INPUT", dir + "/scene.tif"}, {"OUTPUT", dir + "/rx.tif"}},
                                {"OUTPUT"}, project, ok);
    QVERIFY(ok);
    QVERIFY(loaded.contains(dir + "/rx.tif"));
    for (const char* name : {"Target scores of scene", "RX scores of scene"}) {
      const QList<QgsMapLayer*> layers = project.mapLayersByName(name);
      QVERIFY2(layers.size() == 1, name);
      const auto* raster = qobject_cast<QgsRasterLayer*>(layers.front());
      QVERIFY(raster && raster->isValid());
      const auto* ramp = dynamic_cast<const QgsSingleBandPseudoColorRenderer*>(raster->renderer());
      QVERIFY2(ramp && ramp->classificationMax() > ramp->classificationMin(), name);
    }
    // What the engine writes with the same options.
    hyperstream::DetectOptions options;
    options.input = (dir + "/scene.tif").toStdString();
    options.output = (dir + "/engine.tif").toStdString();
    options.detector.method = hyperstream::DetectMethod::MatchedFilter;
    options.detector.components = hyperstream::kSceneMaterials;  // the dialog's default
    options.targetTable = hyperstream::readTargets({(dir + "/em.csv").toStdString(), "", ""});
    TestFeedback engineFeedback;
    hyperstream::runDetection(options, engineFeedback);
    QCOMPARE(testing::samplesOf(dir + "/mf.tif"), testing::samplesOf(dir + "/engine.tif"));
    const hyperstream::DatasetPtr scores =
        hyperstream::openRaster((dir + "/mf.tif").toStdString(), "");
    QCOMPARE(scores->GetRasterCount(), 3);
    QCOMPARE(QString(scores->GetRasterBand(1)->GetDescription()), QString("MF: endmember_1"));

    // The spectral angle mapper against the same table: the class map loads in its colours with
    // the endmembers' names as its legend, the best angle and the counts table load too.
    loaded = runAsTheDialogDoes("hyperstream:sam",
                                {{"INPUT", dir + "/scene.tif"},
                                 {"LIBRARY", dir + "/em.csv"},
                                 {"MAX_ANGLE", 0.1},
                                 {"OUTPUT", dir + "/classes.tif"},
                                 {"OUTPUT_ANGLE", dir + "/angle.tif"},
                                 {"OUTPUT_COUNTS", dir + "/counts.csv"}},
                                {"OUTPUT", "OUTPUT_ANGLE", "OUTPUT_COUNTS"}, project, ok);
    QVERIFY(ok);
    QVERIFY(loaded.contains(dir + "/classes.tif") && loaded.contains(dir + "/angle.tif"));
    const QList<QgsMapLayer*> classLayers = project.mapLayersByName("Classes of scene");
    QCOMPARE(classLayers.size(), 1);
    const auto* classes = qobject_cast<QgsRasterLayer*>(classLayers.front());
    QVERIFY(classes && classes->isValid());
    const auto* palette = dynamic_cast<const QgsPalettedRasterRenderer*>(classes->renderer());
    QVERIFY(palette);
    QCOMPARE(palette->classes().size(), 3);
    QCOMPARE(palette->classes().front().label, QString("endmember_1"));
    bool countsLoaded = false;
    for (QgsMapLayer* layer : project.mapLayers())
      countsLoaded |= layer->source().startsWith(dir + "/counts.csv") && layer->isValid();
    QVERIFY(countsLoaded);
    hyperstream::SamOptions sam;
    sam.input = (dir + "/scene.tif").toStdString();
    sam.library.library = (dir + "/em.csv").toStdString();
    sam.output = (dir + "/engine_classes.tif").toStdString();
    sam.maxAngle = 0.1;
    hyperstream::runSpectralAngles(sam, engineFeedback);
    QCOMPARE(testing::samplesOf(dir + "/classes.tif"),
             testing::samplesOf(dir + "/engine_classes.tif"));

    // Targets from a spectral library (TARGETS' file dialog offers none): the endmembers as an
    // ENVI .sli on the scene's band centres; the scores load and are the engine's from the same
    // library. TARGETS and TARGET_LIBRARY together fail, as does neither.
    const hyperstream::DatasetPtr scene =
        hyperstream::openRaster((dir + "/scene.tif").toStdString(), "");
    const hyperstream::RasterInfo info =
        hyperstream::describeRaster(*scene, (dir + "/scene.tif").toStdString());
    QCOMPARE(info.wavelengths.size(), size_t{30});
    writeSpectralLibrary(dir + "/em", info.wavelengths, options.targetTable.targets);
    loaded = runAsTheDialogDoes("hyperstream:detect",
                                {{"INPUT", dir + "/scene.tif"},
                                 {"TARGET_LIBRARY", dir + "/em.sli"},
                                 {"OUTPUT", dir + "/mf_sli.tif"}},
                                {"OUTPUT"}, project, ok);
    QVERIFY(ok);
    QVERIFY(loaded.contains(dir + "/mf_sli.tif"));
    options.targetTable = hyperstream::readTargets({(dir + "/em.sli").toStdString(), ""});
    options.output = (dir + "/engine_sli.tif").toStdString();
    hyperstream::runDetection(options, engineFeedback);
    QCOMPARE(testing::samplesOf(dir + "/mf_sli.tif"), testing::samplesOf(dir + "/engine_sli.tif"));
    writeSpectralLibrary(dir + "/narrow", {400.0, 410.0, 420.0},
                         {hyperstream::Target{"narrow", {1.0, 2.0, 3.0}}});
    struct Refused {
      QVariantMap parameters;
      QString says;
    };
    const QString scenePath = dir + "/scene.tif";
    for (const Refused& refused :
         {Refused{{{"INPUT", scenePath},
                   {"TARGETS", dir + "/em.csv"},
                   {"TARGET_LIBRARY", dir + "/em.sli"},
                   {"OUTPUT", dir + "/both.tif"}},
                  "not both"},
          Refused{{{"INPUT", scenePath}, {"OUTPUT", dir + "/neither.tif"}}, "TARGET_LIBRARY"},
          Refused{{{"INPUT", scenePath},
                   {"TARGET_LIBRARY", dir + "/missing.sli"},
                   {"OUTPUT", dir + "/missing.tif"}},
                  "TARGET_LIBRARY"},
          // Spectra on 400-420 nm only: they do not cover the scene's bands.
          Refused{{{"INPUT", scenePath},
                   {"TARGET_LIBRARY", dir + "/narrow.sli"},
                   {"OUTPUT", dir + "/narrow.tif"}},
                  "TARGET_LIBRARY"}}) {
      RecordingFeedback feedback;
      runAlgorithm(refused.parameters, feedback, ok, "hyperstream:detect");
      QVERIFY(!ok);
      QVERIFY2(feedback.errors.join(' ').contains(refused.says),
               qPrintable(feedback.errors.join(' ')));
    }
    for (const char* name : {"/both.tif", "/neither.tif", "/missing.tif", "/narrow.tif"})
      QVERIFY(!QFile::exists(dir + name));
  }

  // The analyst's chain on Jasper Ridge from the dialogs, with their defaults: endmembers (as many
  // as the scene has materials: 4 of road, soil, water and tree, within one), their table and
  // points from the layer list as SAM's, detection's and the abundances' spectra, and detection
  // maps that follow the abundances (the mean correlation of each score band with its
  // endmember's FCLS abundance: matched filter >= 0.7, ACE >= 0.55; every band gives 0.18 and
  // 0.15). Then the generated scene's column-layout spectra (synth --truth) in all three.
  void realSceneChainFromTheDialogs() {
    const QString data = testing::sharedDataDir();
    if (data.isEmpty()) QSKIP("../shared/data is absent: the real-scene test needs Jasper Ridge");
    const QString dir = testing::tempDir();
    const QString jasper = data + "/jasper_ridge_100x100x198_uint16.tif";
    QgsProject project;
    bool ok = false;
    runAsTheDialogDoes("hyperstream:endmembers",
                       {{"INPUT", jasper},
                        {"METHOD", 1},
                        {"OUTPUT", dir + "/em.csv"},
                        {"OUTPUT_POINTS", dir + "/em.gpkg"}},
                       {"OUTPUT_POINTS"}, project, ok);
    QVERIFY(ok);
    const QgsMapLayer *table = nullptr, *points = nullptr;
    for (QgsMapLayer* layer : project.mapLayers()) {
      if (layer->source().startsWith(dir + "/em.csv")) table = layer;
      if (layer->source().startsWith(dir + "/em.gpkg")) points = layer;
    }
    QVERIFY(table && table->isValid() && points && points->isValid());
    const auto count = static_cast<int>(qobject_cast<const QgsVectorLayer*>(table)->featureCount());
    qInfo("Jasper Ridge: %d endmembers by default", count);
    QVERIFY(std::abs(count - 4) <= 1);
    // SAM from the layer list, the table and the points: the same classes.
    for (const QgsMapLayer* spectra : {table, points}) {
      const QString classes = dir + "/classes_" + spectra->id() + ".tif";
      const QStringList loaded = runAsTheDialogDoes(
          "hyperstream:sam",
          {{"INPUT", jasper}, {"LIBRARY_TABLE", spectra->id()}, {"OUTPUT", classes}}, {"OUTPUT"},
          project, ok);
      QVERIFY(ok);
      QVERIFY(loaded.contains(classes));
    }
    QCOMPARE(testing::samplesOf(dir + "/classes_" + table->id() + ".tif"),
             testing::samplesOf(dir + "/classes_" + points->id() + ".tif"));
    // Abundances from the points, detection from the table, all with their defaults.
    runAsTheDialogDoes(
        "hyperstream:abundances",
        {{"INPUT", jasper}, {"ENDMEMBERS", points->id()}, {"OUTPUT", dir + "/ab.tif"}}, {"OUTPUT"},
        project, ok);
    QVERIFY(ok);
    const testing::Cube abundances = testing::readCube((dir + "/ab.tif").toStdString());
    QCOMPARE(abundances.bands, count);
    for (const auto& [method, least] : {std::pair<int, double>{0, 0.7}, {1, 0.55}}) {
      const QString scores = dir + QString("/scores%1.tif").arg(method);
      runAsTheDialogDoes(
          "hyperstream:detect",
          {{"INPUT", jasper}, {"TARGETS", table->id()}, {"METHOD", method}, {"OUTPUT", scores}},
          {"OUTPUT"}, project, ok);
      QVERIFY(ok);
      const testing::Cube map = testing::readCube(scores.toStdString());
      QCOMPARE(map.bands, count);
      double mean = 0;
      for (int e = 0; e < count; ++e) {
        std::vector<double> a, b;
        for (int64_t p = 0; p < map.pixels(); ++p) {
          a.push_back(map.values[p * count + e]);
          b.push_back(abundances.values[p * count + e]);
        }
        mean += testing::correlation(a, b) / count;
      }
      qInfo("%s with the defaults: mean r with the abundances %.3f", method == 0 ? "MF" : "ACE",
            mean);
      QVERIFY(mean >= least);
    }

    // Spectra by column (a wavelength column, then one per spectrum) as synth --truth writes
    // them, in all three.
    hyperstream::SynthOptions synth;
    synth.output = (dir + "/scene.tif").toStdString();
    synth.rows = synth.cols = 40;
    synth.bands = 40;
    synth.endmembers = 3;
    synth.writeTruth = true;
    TestFeedback synthFeedback;
    hyperstream::synthesizeScene(synth, synthFeedback);
    const QString byColumn = dir + "/scene_endmembers.csv";
    for (const auto& [id, parameter] : {std::pair<QString, QString>{"hyperstream:sam", "LIBRARY"},
                                        {"hyperstream:sam", "LIBRARY_TABLE"},
                                        {"hyperstream:detect", "TARGETS"},
                                        {"hyperstream:abundances", "ENDMEMBERS"}}) {
      RecordingFeedback feedback;
      const QVariantMap results = runAlgorithm(
          {{"INPUT", dir + "/scene.tif"}, {parameter, byColumn}, {"OUTPUT", dir + "/o.tif"}},
          feedback, ok, id);
      QVERIFY2(ok, qPrintable(id + ": " + feedback.errors.join(' ')));
      QCOMPARE(testing::readCube((dir + "/o.tif").toStdString()).bands,
               id == "hyperstream:sam" ? 1 : 3);
    }
  }

  // The unmixing chain from the dialog: SPP, endmembers searched in its output (the points layer
  // loads), FCLS abundances (the raster loads, a band per endmember summing to one); then the
  // shipped model of the same chain validates and runs.
  void unmixingChainFromTheDialog() {
    for (const char* id : {"hyperstream:endmembers", "hyperstream:abundances"}) {
      const QgsProcessingAlgorithm* algorithm =
          QgsApplication::processingRegistry()->algorithmById(id);
      QVERIFY2(algorithm, id);
      QVERIFY(!algorithm->shortHelpString().isEmpty());
      // The Model Designer draws a step from svgIconPath(): the algorithm's own icon.
      QVERIFY(QFile::exists(algorithm->svgIconPath()));
      QVERIFY(algorithm->svgIconPath().endsWith(QString(id).mid(12) + ".svg"));
      for (const QgsProcessingParameterDefinition* parameter : algorithm->parameterDefinitions())
        QVERIFY2(!parameter->help().isEmpty(), qPrintable(parameter->name()));
    }
    const QString dir = testing::tempDir();
    hyperstream::SynthOptions synth;
    synth.output = (dir + "/scene.tif").toStdString();
    synth.rows = synth.cols = 60;
    synth.bands = 30;
    synth.endmembers = 4;
    synth.purePatch = 4;
    TestFeedback synthFeedback;
    hyperstream::synthesizeScene(synth, synthFeedback);
    QgsProject project;
    bool ok = false;
    runAsTheDialogDoes("hyperstream:spp",
                       {{"INPUT", dir + "/scene.tif"},
                        {"OUTPUT", dir + "/spp.tif"},
                        {"OUTPUT_ALPHA", dir + "/alpha.tif"}},
                       {"OUTPUT", "OUTPUT_ALPHA"}, project, ok);
    QVERIFY(ok);
    QStringList loaded = runAsTheDialogDoes("hyperstream:endmembers",
                                            {{"INPUT", dir + "/scene.tif"},
                                             {"LOCATIONS", dir + "/spp.tif"},
                                             {"COUNT", 4},
                                             {"METHOD", 1},
                                             {"OUTPUT", dir + "/em.csv"},
                                             {"OUTPUT_POINTS", dir + "/em.gpkg"}},
                                            {"OUTPUT_POINTS"}, project, ok);
    QVERIFY(ok);
    QVERIFY(QFileInfo::exists(dir + "/em.csv"));
    QVERIFY2(
        std::any_of(loaded.begin(), loaded.end(),
                    [&](const QString& source) { return source.startsWith(dir + "/em.gpkg"); }),
        qPrintable(loaded.join(", ")));
    // The table loads too, named after the input; Abundances takes it as the layer picked from
    // the list (its id), as the dialog passes it.
    const QgsMapLayer* table = nullptr;
    for (QgsMapLayer* layer : project.mapLayers())
      if (layer->source().startsWith(dir + "/em.csv")) table = layer;
    QVERIFY2(table, qPrintable(loaded.join(", ")));
    QVERIFY(table->isValid());
    QCOMPARE(table->name(), QString("Endmembers of scene"));
    loaded = runAsTheDialogDoes(
        "hyperstream:abundances",
        {{"INPUT", dir + "/scene.tif"}, {"ENDMEMBERS", table->id()}, {"OUTPUT", dir + "/ab.tif"}},
        {"OUTPUT"}, project, ok);
    QVERIFY(ok);
    QVERIFY(loaded.contains(dir + "/ab.tif"));
    for (QgsMapLayer* layer : project.mapLayers()) QVERIFY(layer->isValid());
    // Named after what they are and the input; styled for what they hold.
    const auto named = [&](const QString& name) {
      const QList<QgsMapLayer*> layers = project.mapLayersByName(name);
      return layers.size() == 1 ? layers.front() : nullptr;
    };
    const auto* abundanceLayer = qobject_cast<QgsRasterLayer*>(named("Abundances of scene"));
    QVERIFY(abundanceLayer);
    const auto* ramp =
        dynamic_cast<const QgsSingleBandPseudoColorRenderer*>(abundanceLayer->renderer());
    QVERIFY(ramp && ramp->band() == 1);
    QCOMPARE(ramp->classificationMin(), 0.0);
    QCOMPARE(ramp->classificationMax(), 1.0);
    const auto* points = qobject_cast<QgsVectorLayer*>(named("Endmember pixels of scene"));
    QVERIFY(points && points->labelsEnabled());
    QCOMPARE(
        static_cast<const QgsVectorLayerSimpleLabeling*>(points->labeling())->settings().fieldName,
        QString("id"));
    const auto* alpha =
        qobject_cast<QgsRasterLayer*>(named("Alpha (mean neighbour angle) of scene"));
    QVERIFY2(alpha, qPrintable(QStringList(project.mapLayers().keys()).join(", ")));
    const auto* gray = dynamic_cast<const QgsSingleBandGrayRenderer*>(alpha->renderer());
    QVERIFY(gray && gray->contrastEnhancement());
    QVERIFY(gray->contrastEnhancement()->maximumValue() >
            gray->contrastEnhancement()->minimumValue());
    const testing::Cube abundances = testing::readCube((dir + "/ab.tif").toStdString());
    QCOMPARE(abundances.bands, 4);
    for (int64_t p = 0; p < abundances.pixels(); ++p) {
      if (std::isnan(abundances.values[p * 4])) continue;
      double sum = 0;
      for (int e = 0; e < 4; ++e) sum += abundances.values[p * 4 + e];
      QVERIFY(std::abs(sum - 1) < 1e-5);
    }

    QgsProcessingModelAlgorithm model;
    QVERIFY(model.fromFile(
        QStringLiteral(HYPERSTREAM_SOURCE_DIR "/tests/data/spp_endmembers_abundances.model3")));
    QStringList issues;
    QVERIFY2(model.validate(issues), qPrintable(issues.join('\n')));
    // The dialog asks for the image before the count (QGIS 3.22 orders inputs by name), whose
    // default, 0, is the signal subspace's.
    model.initAlgorithm();
    QCOMPARE(model.parameterDefinitions().first()->name(), QString("image"));
    QCOMPARE(model.parameterDefinition("number_of_endmembers")->defaultValue().toInt(), 0);
    QgsProcessingContext context;
    QgsProcessingFeedback feedback;
    const QVariantMap results = model.run({{"image", dir + "/scene.tif"},
                                           {"number_of_endmembers", 4},
                                           {"endmembers:table", dir + "/model.csv"},
                                           {"abundances:abundances", dir + "/model_ab.tif"}},
                                          context, &feedback, &ok);
    QVERIFY(ok);
    QCOMPARE(testing::readCube((dir + "/model_ab.tif").toStdString()).bands, 4);
  }

  // A model with hyperstream:mnf or hyperstream:denoise as its child validates and runs, as the
  // Model Designer's would.
  void transformsInAModel_data() {
    QTest::addColumn<QString>("algorithm");
    QTest::addColumn<int>("bands");
    QTest::newRow("mnf") << "hyperstream:mnf" << 2;
    QTest::newRow("denoise") << "hyperstream:denoise" << 6;
  }
  void transformsInAModel() {
    QFETCH(QString, algorithm);
    QFETCH(int, bands);
    testing::Cube cube = testing::correlatedCube(30, 30, 6, 2);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float32);
    QgsProcessingModelAlgorithm model("transform model", "tests");
    model.addModelParameter(new QgsProcessingParameterRasterLayer("scene", "Scene"),
                            QgsProcessingModelParameter("scene"));
    QgsProcessingModelChildAlgorithm child(algorithm);
    child.setChildId("mnf");
    child.addParameterSources(
        "INPUT", {QgsProcessingModelChildParameterSource::fromModelParameter("scene")});
    child.addParameterSources("COMPONENTS",
                              {QgsProcessingModelChildParameterSource::fromStaticValue(2)});
    // As the Model Designer's dialog does: every other parameter at its default.
    for (const QgsProcessingParameterDefinition* parameter :
         child.algorithm()->parameterDefinitions())
      if (!parameter->isDestination() && !child.parameterSources().contains(parameter->name()))
        child.addParameterSources(
            parameter->name(),
            {QgsProcessingModelChildParameterSource::fromStaticValue(parameter->defaultValue())});
    QgsProcessingModelOutput output("components", "Output");
    output.setChildId("mnf");
    output.setChildOutputName("OUTPUT");
    child.setModelOutputs({{"components", output}});
    model.addChildAlgorithm(child);
    QStringList issues;
    QVERIFY2(model.validate(issues), qPrintable(issues.join('\n')));
    QgsProcessingContext context;
    QgsProcessingFeedback feedback;
    bool ok = false;
    const QVariantMap results =
        model.run({{"scene", dir + "/in.tif"}, {"mnf:components", dir + "/model.tif"}}, context,
                  &feedback, &ok);
    QVERIFY(ok);
    QCOMPARE(testing::readCube((dir + "/model.tif").toStdString()).bands, bands);
  }

  // What the engine would refuse only after reading the input is refused by the dialog's check:
  // an even SPP window ran, failed, and was followed by "layers were not correctly generated".
  void parameterChecksBeforeTheRun() {
    const QString dir = testing::tempDir();
    testing::writeCube(testing::correlatedCube(10, 10, 4, 3), (dir + "/in.tif").toStdString(),
                       GDT_Float32);
    QgsProcessingContext context;
    const QgsProcessingAlgorithm* spp =
        QgsApplication::processingRegistry()->algorithmById("hyperstream:spp");
    QString message;
    QVERIFY(!spp->checkParameterValues(
        {{"INPUT", dir + "/in.tif"}, {"WINDOW", 4}, {"OUTPUT", dir + "/o.tif"}}, context,
        &message));
    QVERIFY2(message.startsWith("WINDOW"), qPrintable(message));
    QVERIFY(spp->checkParameterValues(
        {{"INPUT", dir + "/in.tif"}, {"WINDOW", 5}, {"OUTPUT", dir + "/o.tif"}}, context,
        &message));
    const QgsProcessingAlgorithm* pca =
        QgsApplication::processingRegistry()->algorithmById("hyperstream:pca");
    for (const char* options : {"COMPRESS=BOGUS", "NOTANOPTION", "FOO=BAR"}) {
      QVERIFY(!pca->checkParameterValues(
          {{"INPUT", dir + "/in.tif"}, {"CREATION_OPTIONS", options}, {"OUTPUT", dir + "/o.tif"}},
          context, &message));
      QVERIFY2(message.startsWith("CREATION_OPTIONS"), qPrintable(message));
    }
    QVERIFY(pca->checkParameterValues({{"INPUT", dir + "/in.tif"},
                                       {"CREATION_OPTIONS", "COMPRESS=DEFLATE|PREDICTOR=3"},
                                       {"OUTPUT", QgsProcessing::TEMPORARY_OUTPUT}},
                                      context, &message));
    QVERIFY(context.layersToLoadOnCompletion().isEmpty());  // checking resolves no output
    // Typed band ranges and wavelength ranges are checked too.
    const QList<std::pair<QVariantMap, QString>> refused = {
        {{{"BAND_LIST", "1-3,x"}}, "BAND_LIST"},
        {{{"BAND_LIST", "1-3"}, {"BANDS", QVariantList{1, 2}}}, "BAND_LIST"},
        {{{"EXCLUDE_NM", "1340-1450,1790"}}, "EXCLUDE_NM"},
        {{{"EXCLUDE_NM", "1450-1340"}}, "EXCLUDE_NM"}};
    for (const auto& [extra, parameter] : refused) {
      QVariantMap parameters = {{"INPUT", dir + "/in.tif"}, {"OUTPUT", dir + "/o.tif"}};
      parameters.insert(extra);
      QVERIFY(!pca->checkParameterValues(parameters, context, &message));
      QVERIFY2(message.startsWith(parameter), qPrintable(message));
    }
    QVERIFY(pca->checkParameterValues({{"INPUT", dir + "/in.tif"},
                                       {"BAND_LIST", "1-2, 4"},
                                       {"EXCLUDE_NM", "1340-1450, 1790-1960"},
                                       {"OUTPUT", dir + "/o.tif"}},
                                      context, &message));
  }

  // Anything that escapes the engine becomes a QgsProcessingException: an exception that reaches
  // QGIS's event loop shows a dialog, and qgis_process then never returns.
  void everyFailureIsAProcessingException() {
    const QList<std::function<void()>> failures = {
        [] { throw std::bad_alloc(); },
        [] { throw std::out_of_range("vector::at"); },
        [] { throw 42; },
    };
    for (const std::function<void()>& failure : failures) {
      try {
        hyperstream::runEngineJob(failure);
        QFAIL("nothing thrown");
      } catch (const QgsProcessingException& e) {
        QVERIFY(!e.what().isEmpty());
      }
    }
    try {
      hyperstream::runEngineJob([] { throw std::bad_alloc(); });
    } catch (const QgsProcessingException& e) {
      QVERIFY2(e.what().startsWith("RAM_MB"), qPrintable(e.what()));
    }
  }

  void badParametersNameTheParameter() {
    testing::Cube cube = testing::correlatedCube(10, 10, 4, 3);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float32);
    struct Case {
      QVariantMap parameters;
      QString parameter;
    };
    const QList<Case> cases = {
        {{{"INPUT", dir + "/in.tif"}, {"COMPONENTS", 9}, {"OUTPUT", dir + "/o.tif"}}, "COMPONENTS"},
        {{{"INPUT", dir + "/in.tif"}, {"DEVICE", 2}, {"OUTPUT", dir + "/o.tif"}}, "DEVICE"},
        {{{"INPUT", dir + "/in.tif"}, {"DEVICE", 3}, {"OUTPUT", dir + "/o.tif"}}, "DEVICE"},
        {{{"INPUT", dir + "/in.tif"}, {"OUTPUT", dir + "/in.tif"}}, "OUTPUT"},
        {{{"INPUT", dir + "/missing.tif"}, {"OUTPUT", dir + "/o.tif"}}, "INPUT"},
    };
    for (const Case& c : cases) {
      RecordingFeedback feedback;
      bool ok = true;
      runAlgorithm(c.parameters, feedback, ok);
      QVERIFY(!ok);
      QVERIFY2(feedback.errors.join(' ').contains(c.parameter),
               qPrintable(feedback.errors.join(' ')));
    }
    QCOMPARE(testing::filesIn(dir), QStringList{"in.tif"});
  }

  // Files a run reads are never its outputs, and crafted statistics are refused, in the dialog as
  // on the command line (the endmember table was replaced by the report; components: 1000000 in
  // the statistics crashed QGIS).
  void filesReadAreNeverWrittenFromTheDialog() {
    const QString dir = testing::tempDir();
    hyperstream::SynthOptions synth;
    synth.output = (dir + "/scene.tif").toStdString();
    synth.rows = synth.cols = 40;
    synth.bands = 12;
    TestFeedback quiet;
    hyperstream::synthesizeScene(synth, quiet);
    QgsProject project;
    bool ok = false;
    runAsTheDialogDoes("hyperstream:endmembers",
                       {{"INPUT", dir + "/scene.tif"}, {"COUNT", 3}, {"OUTPUT", dir + "/em.csv"}},
                       {}, project, ok);
    QVERIFY(ok);
    runAsTheDialogDoes("hyperstream:pca",
                       {{"INPUT", dir + "/scene.tif"},
                        {"COMPONENTS", 3},
                        {"OUTPUT", dir + "/pcs.tif"},
                        {"OUTPUT_STATS", dir + "/pcs.json"}},
                       {"OUTPUT"}, project, ok);
    QVERIFY(ok);
    QFile table(dir + "/em.csv");
    QVERIFY(table.open(QIODevice::ReadOnly));
    const QByteArray endmembers = table.readAll();
    table.close();
    runAsTheDialogDoes("hyperstream:abundances",
                       {{"INPUT", dir + "/scene.tif"},
                        {"ENDMEMBERS", dir + "/em.csv"},
                        {"OUTPUT", dir + "/ab.tif"},
                        {"OUTPUT_HTML_FILE", dir + "/em.csv"}},
                       {"OUTPUT"}, project, ok);
    QVERIFY(!ok);
    QVERIFY(table.open(QIODevice::ReadOnly));
    QCOMPARE(table.readAll(), endmembers);
    QVERIFY(!QFileInfo::exists(dir + "/ab.tif"));
    QFile stats(dir + "/pcs.json");
    QVERIFY(stats.open(QIODevice::ReadOnly));
    QJsonObject crafted = QJsonDocument::fromJson(stats.readAll()).object();
    crafted["components"] = 1000000;
    QFile craftedFile(dir + "/crafted.json");
    QVERIFY(craftedFile.open(QIODevice::WriteOnly));
    craftedFile.write(QJsonDocument(crafted).toJson());
    craftedFile.close();
    RecordingFeedback feedback;
    runAlgorithm({{"INPUT", dir + "/scene.tif"},
                  {"STATS", dir + "/crafted.json"},
                  {"OUTPUT", dir + "/applied.tif"}},
                 feedback, ok, "hyperstream:applytransform");
    QVERIFY(!ok);
    QVERIFY2(feedback.errors.join(' ').contains("STATS") &&
                 feedback.errors.join(' ').contains("\"components\""),
             qPrintable(feedback.errors.join(' ')));
    QVERIFY(!QFileInfo::exists(dir + "/applied.tif"));
  }

  void cancelStopsWithinASecond() {
    // 1200 x 800 x 100 float32 (384 MB) in small strips, cancelled once the first strip is done
    // (how long the whole job takes depends on the machine).
    const QString dir = testing::tempDir();
    hyperstream::SynthOptions synth;
    synth.output = (dir + "/big.tif").toStdString();
    synth.rows = 1200;
    synth.cols = 800;
    synth.bands = 100;
    synth.type = GDT_Float32;
    TestFeedback quiet;
    hyperstream::synthesizeScene(synth, quiet);
    RecordingFeedback feedback;
    bool ok = true;
    QElapsedTimer sinceCancel;
    std::atomic<bool> started{false}, finished{false};
    QObject::connect(
        &feedback, &QgsFeedback::progressChanged, &feedback,
        [&](double percent) { started = percent > 0; }, Qt::DirectConnection);
    std::thread canceller([&] {
      while (!started && !finished) QThread::msleep(1);
      sinceCancel.start();
      feedback.cancel();
    });
    runAlgorithm({{"INPUT", dir + "/big.tif"}, {"RAM_MB", 64}, {"OUTPUT", dir + "/o.tif"}},
                 feedback, ok);
    finished = true;
    canceller.join();
    const double seconds = sinceCancel.nsecsElapsed() * 1e-9;
    qInfo("stopped %.3f s after Cancel", seconds);
    QVERIFY(!ok);
    QVERIFY(seconds < 1.0);
    QCOMPARE(testing::filesIn(dir), QStringList{"big.tif"});
  }

  void cancelLeavesNoOutput() {
    testing::Cube cube = testing::correlatedCube(60, 60, 6, 3);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float32);
    RecordingFeedback feedback;
    feedback.cancel();
    bool ok = true;
    runAlgorithm({{"INPUT", dir + "/in.tif"}, {"OUTPUT", dir + "/o.tif"}}, feedback, ok);
    QVERIFY(!ok);
    QVERIFY2(testing::filesIn(dir) == QStringList{"in.tif"},
             qPrintable(testing::filesIn(dir).join(',')));
  }

 private:
  QTemporaryDir helpFolder_;
};

QTEST_MAIN(QgisTests)
#include "test_qgis.moc"
