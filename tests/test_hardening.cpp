// Integration tests of the command line against careful and hostile input (issue 34): no file a
// run reads is ever written, crafted statistics are refused before any work, components are
// inverted only with the statistics of the fit that wrote them, and inputs that are not regular
// files are refused at once.

#include "TestSupport.h"

#include <gdal_priv.h>

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QtTest>

#include <sys/stat.h>

#include <functional>

namespace {

struct Run {
  int exitCode = -1;
  bool finished = false;
  QString err;
};

Run run(const QStringList& arguments, int timeoutMs = 120000) {
  QProcess process;
  process.start(QStringLiteral(HYPERSTREAM_CLI), arguments + QStringList{"--quiet"});
  Run result;
  result.finished = process.waitForFinished(timeoutMs);
  if (!result.finished) {
    process.kill();
    process.waitForFinished();
  }
  result.exitCode = process.exitCode();
  result.err = process.readAllStandardError();
  return result;
}

// Every file of a folder (hidden ones too) with a hash of its contents.
QMap<QString, QByteArray> snapshot(const QString& folder) {
  QMap<QString, QByteArray> files;
  for (const QString& name : testing::filesIn(folder)) {
    QFile file(folder + "/" + name);
    QFileInfo info(file);
    files[name] = info.isFile() && file.open(QIODevice::ReadOnly)
                      ? QCryptographicHash::hash(file.readAll(), QCryptographicHash::Sha1)
                      : QByteArray("(not a file)");
  }
  return files;
}

// Runs the command line, expecting exit status 1 with "error [parameter]" and `words`, within
// 20 s, and the folder exactly as it was: the same files with the same contents.
void expectRefused(const QStringList& arguments, const QString& parameter, const QString& words,
                   const QString& folder) {
  const auto before = snapshot(folder);
  const Run result = run(arguments, 20000);
  QVERIFY2(result.finished, qPrintable("did not end within 20 s: " + arguments.join(' ')));
  QVERIFY2(
      result.exitCode == 1,
      qPrintable(
          QString("exit %1 for %2: %3").arg(result.exitCode).arg(arguments.join(' '), result.err)));
  QVERIFY2(result.err.contains("error [" + parameter + "]") && result.err.contains(words),
           qPrintable(arguments.join(' ') + " -> " + result.err));
  QCOMPARE(snapshot(folder), before);
}

void expectRuns(const QStringList& arguments) {
  const Run result = run(arguments);
  QVERIFY2(result.exitCode == 0, qPrintable(arguments.join(' ') + " -> " + result.err));
}

QJsonObject readJson(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(file.readAll()).object();
}

void writeJson(const QString& path, const QJsonDocument& json) {
  QFile file(path);
  QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
  file.write(json.toJson());
}

// The array at `key` with element [i] (or [i][j]) replaced.
QJsonObject withElement(QJsonObject json, const QString& key, int i, int j,
                        const QJsonValue& value) {
  QJsonArray outer = json[key].toArray();
  if (j < 0) {
    outer[i] = value;
  } else {
    QJsonArray inner = outer[i].toArray();
    inner[j] = value;
    outer[i] = inner;
  }
  json[key] = outer;
  return json;
}

// A small demo scene (Int16, noisy) and a second, different one, in a fresh folder.
QString sceneFolder() {
  const QString dir = testing::tempDir();
  for (const char* name : {"scene", "other"}) {
    const Run synth = run({"synth", dir + "/" + name + ".tif", "--rows", "40", "--cols", "50",
                           "--bands", "24", "--seed", name[0] == 's' ? "1" : "2"});
    if (synth.exitCode != 0) qWarning() << synth.err;
  }
  return dir;
}

}  // namespace

class HardeningTests : public QObject {
  Q_OBJECT
 private slots:
  // Crafted statistics: each field's damage refused as STATS naming the field, nothing written.
  void craftedStatistics() {
    const QString dir = sceneFolder();
    expectRuns({"pca", dir + "/scene.tif", dir + "/p.tif", "--components", "5", "--stats",
                dir + "/p.json"});
    expectRuns({"mnf", dir + "/scene.tif", dir + "/m.tif", "--components", "5", "--stats",
                dir + "/m.json"});
    const QJsonObject pca = readJson(dir + "/p.json");
    const QJsonObject mnf = readJson(dir + "/m.json");
    QVERIFY(!pca.isEmpty() && !mnf.isEmpty());
    QJsonArray scaled = pca["eigenvectors"].toArray()[2].toArray();
    for (auto&& value : scaled) value = value.toDouble() * 1.01;
    QJsonObject notUnit = pca;
    notUnit["eigenvectors"] = [&] {
      QJsonArray vectors = pca["eigenvectors"].toArray();
      vectors[2] = scaled;
      return vectors;
    }();
    QJsonObject swapped = mnf;  // MNF vectors that are not those of its inverse loadings
    QJsonArray mnfVectors = mnf["eigenvectors"].toArray();
    const QJsonValue first = mnfVectors[0];
    mnfVectors[0] = mnfVectors[1];
    mnfVectors[1] = first;
    swapped["eigenvectors"] = mnfVectors;
    auto with = [](QJsonObject json, const char* key, const QJsonValue& value) {
      json[key] = value;
      return QJsonDocument(json);
    };
    const std::vector<std::tuple<QString, QJsonDocument, QString>> crafted = {
        {"components 1000000", with(pca, "components", 1000000), "\"components\""},
        {"components 0", with(pca, "components", 0), "\"components\""},
        {"components -5", with(pca, "components", -5), "\"components\""},
        {"components 2.5", with(pca, "components", 2.5), "\"components\""},
        {"components \"5\"", with(pca, "components", "5"), "\"components\""},
        {"vector entry \"abc\"",
         QJsonDocument(withElement(pca, "eigenvectors", 1, 3, QJsonValue("abc"))),
         "\"eigenvectors 2\" holds \"abc\""},
        {"vector entry null", QJsonDocument(withElement(pca, "eigenvectors", 0, 0, QJsonValue())),
         "\"eigenvectors 1\" holds null"},
        {"vector entry 1e300", QJsonDocument(withElement(pca, "eigenvectors", 1, 3, 1e300)),
         "not orthonormal"},
        {"vector scaled by 1.01", QJsonDocument(notUnit), "not orthonormal"},
        {"mnf vectors swapped", QJsonDocument(swapped), "noise-orthonormal"},
        {"inverse loading \"abc\"",
         QJsonDocument(withElement(mnf, "inverse_loadings", 0, 1, QJsonValue("abc"))),
         "\"inverse_loadings 1\" holds \"abc\""},
        {"mean 1e308", QJsonDocument(withElement(pca, "mean", 2, -1, 1e308)),
         "beyond what Int16 holds"},
        {"mean \"x\"", QJsonDocument(withElement(pca, "mean", 2, -1, QJsonValue("x"))),
         "\"mean\" holds \"x\""},
        {"negative stddev", QJsonDocument(withElement(pca, "stddev", 0, -1, -3.0)), "\"stddev\""},
        {"eigenvalue -1", QJsonDocument(withElement(pca, "eigenvalues", 0, -1, -1.0)),
         "\"eigenvalues\""},
        {"bands 0", QJsonDocument(withElement(pca, "bands", 0, -1, 0)), "\"bands\""},
        {"bands twice", QJsonDocument(withElement(pca, "bands", 1, -1, 1)), "twice"},
        {"no matrix", with(pca, "matrix", QJsonValue()), "\"matrix\""},
        {"transform ica", with(pca, "transform", "ica"), "\"transform\""},
        {"byte ranges short",
         with(pca, "byte_rescale",
              QJsonObject{{"low", 0}, {"minimum", QJsonArray{1}}, {"maximum", QJsonArray{2}}}),
         "\"minimum\""},
        {"top-level array", QJsonDocument(QJsonArray{1, 2}), "a JSON array"},
    };
    for (const auto& [name, json, words] : crafted) {
      writeJson(dir + "/crafted.json", json);
      expectRefused({"apply", dir + "/crafted.json", dir + "/scene.tif", dir + "/out.tif"}, "STATS",
                    words, dir);
      expectRefused({"inverse", dir + "/p.tif", dir + "/crafted.json", dir + "/out.tif"}, "STATS",
                    words, dir);
      if (QTest::currentTestFailed()) qWarning() << "case:" << name;
    }
    writeJson(dir + "/crafted.json", QJsonDocument(pca));  // rewritten by Qt, still valid
    expectRuns({"apply", dir + "/crafted.json", dir + "/scene.tif", dir + "/out.tif"});
  }

  // No output may be a file the run reads, or a sidecar GDAL would read with one.
  void filesReadAreNeverWritten() {
    const QString dir = sceneFolder();
    const QString scene = dir + "/scene.tif";
    expectRuns({"pca", scene, dir + "/p.tif", "--components", "5", "--stats", dir + "/p.json"});
    expectRuns({"endmembers", scene, dir + "/em.csv", "--count", "3"});
    expectRuns({"spp", scene, dir + "/spp.tif"});
    expectRefused({"apply", dir + "/p.json", scene, dir + "/p.json", "--format", "GTiff"}, "OUTPUT",
                  "read by this run (STATS)", dir);
    expectRefused(
        {"inverse", dir + "/p.tif", dir + "/p.json", dir + "/p.json", "--format", "GTiff"},
        "OUTPUT", "read by this run (STATS)", dir);
    expectRefused({"abundances", scene, dir + "/em.csv", dir + "/a.tif", "--html", dir + "/em.csv"},
                  "OUTPUT_HTML_FILE", "read by this run (ENDMEMBERS)", dir);
    expectRefused({"abundances", scene, dir + "/em.csv", dir + "/a.tif", "--rmse", dir + "/em.csv",
                   "--format", "GTiff"},
                  "OUTPUT_RMSE", "read by this run (ENDMEMBERS)", dir);
    expectRefused({"abundances", scene, dir + "/em.csv", dir + "/em.csv", "--format", "GTiff"},
                  "OUTPUT", "read by this run (ENDMEMBERS)", dir);
    expectRefused({"endmembers", scene, dir + "/spp.tif", "--count", "3", "--locations-from",
                   dir + "/spp.tif"},
                  "OUTPUT", "read by this run (LOCATIONS)", dir);
    // Sidecars that do not exist yet: an output there would become part of the input.
    expectRefused({"denoise", scene, scene + ".aux.xml"}, "OUTPUT", "GDAL reads with INPUT", dir);
    // Refused before the driver's probe runs: without GDAL_DATA, the PDS4 driver that ".xml"
    // calls for fails first with a message of its own (seen on a machine without GDAL's data).
    const QByteArray gdalData = qgetenv("GDAL_DATA");
    qputenv("GDAL_DATA", (dir + "/no-such-folder").toUtf8());
    expectRefused({"denoise", scene, scene + ".aux.xml"}, "OUTPUT", "GDAL reads with INPUT", dir);
    if (gdalData.isNull())
      qunsetenv("GDAL_DATA");
    else
      qputenv("GDAL_DATA", gdalData);
    expectRefused({"pca", scene, dir + "/o.tif", "--stats", dir + "/scene.aux"}, "OUTPUT_STATS",
                  "GDAL reads with INPUT", dir);
    expectRefused(
        {"spp", scene, dir + "/o.tif", "--alpha", dir + "/scene.tfw", "--format", "GTiff"},
        "OUTPUT_ALPHA", "GDAL reads with INPUT", dir);
    expectRefused({"pca", scene, dir + "/scene", "--format", "ENVI"}, "OUTPUT",
                  "also writes '" + dir + "/scene.hdr'", dir);
  }

  // Every file a table of spectra was read from (the table, a link to it, an ENVI library's data
  // and header, a USGS folder's spectra and its wavelength file, the points' GeoPackage) is
  // refused as each output of detect, sam and abundances, the folder left as it was.
  void filesOfTablesAreNeverWritten() {
    const QString dir = sceneFolder();
    const QString scene = dir + "/scene.tif";
    expectRuns(
        {"endmembers", scene, dir + "/em.csv", "--count", "3", "--points", dir + "/em.gpkg"});
    QVERIFY(QFile::link(dir + "/em.csv", dir + "/link.csv"));
    QString wavelengths, values;
    for (int c = 0; c < 60; ++c) {  // 0.35-2.71 um
      wavelengths += QString::number(0.35 + 0.04 * c) + "\n";
      values += QString::number(0.2 + 0.001 * c) + "\n";
    }
    QDir().mkpath(dir + "/usgs");
    for (const char* name : {"s0", "s1"}) {
      QFile spectrum(dir + "/usgs/" + name + ".txt");
      QVERIFY(spectrum.open(QIODevice::WriteOnly));
      spectrum.write(("splib07a Record=1: " + QString(name) + "\n" + values).toUtf8());
    }
    QFile channels(dir + "/wave.txt");
    QVERIFY(channels.open(QIODevice::WriteOnly));
    channels.write(("splib07a Wavelengths\n" + wavelengths).toUtf8());
    channels.close();
    {
      QFile header(dir + "/lib.hdr");
      QVERIFY(header.open(QIODevice::WriteOnly));
      QStringList centres;
      std::vector<float> spectrum;
      for (int c = 0; c < 120; ++c) {  // 350-2730 nm every 20 nm
        centres << QString::number(350 + 20 * c);
        spectrum.push_back(0.1F + 0.001F * static_cast<float>(c));
      }
      header.write(("ENVI\nsamples = 120\nlines = 1\nbands = 1\nheader offset = 0\nfile type = "
                    "ENVI Spectral Library\ndata type = 4\nbyte order = 0\nwavelength units = "
                    "Nanometers\nspectra names = {a}\nwavelength = {" +
                    centres.join(", ") + "}\n")
                       .toUtf8());
      QFile data(dir + "/lib.sli");
      QVERIFY(data.open(QIODevice::WriteOnly));
      data.write(reinterpret_cast<const char*>(spectrum.data()),
                 static_cast<qint64>(spectrum.size() * sizeof(float)));
    }
    struct Table {
      QStringList arguments;  // as the command takes it
      QStringList files;      // what it is read from
      QString parameter, wavelengthParameter;
    };
    const auto tables = [&](const QString& table, const QString& wavelengths) {
      return std::vector<Table>{
          {{dir + "/em.csv"}, {dir + "/em.csv"}, table, {}},
          {{dir + "/link.csv"}, {dir + "/em.csv", dir + "/link.csv"}, table, {}},
          {{dir + "/em.gpkg"}, {dir + "/em.gpkg"}, table, {}},
          {{dir + "/lib.sli"}, {dir + "/lib.sli", dir + "/lib.hdr"}, table, {}},
          {{dir + "/usgs", "--" + wavelengths, dir + "/wave.txt"},
           {dir + "/usgs/s0.txt", dir + "/usgs/s1.txt", dir + "/wave.txt"},
           table,
           wavelengths == "target-wavelengths" ? "TARGET_WAVELENGTHS" : "LIBRARY_WAVELENGTHS"}};
    };
    struct Command {
      QString name;
      QStringList extra;
      QStringList outputs;  // options; "" for the positional output
      QStringList outputParameters;
      std::vector<Table> tables;
    };
    std::vector<Table> endmemberTables = tables("ENDMEMBERS", "");
    endmemberTables.pop_back();  // USGS spectra need a wavelength file, which abundances take not
    const std::vector<Command> commands{
        {"detect",
         {"--method", "ace"},
         {"", "--html", "--stats"},
         {"OUTPUT", "OUTPUT_HTML_FILE", "OUTPUT_STATS"},
         tables("TARGETS", "target-wavelengths")},
        {"sam",
         {},
         {"", "--angle", "--angles", "--counts", "--html"},
         {"OUTPUT", "OUTPUT_ANGLE", "OUTPUT_ANGLES", "OUTPUT_COUNTS", "OUTPUT_HTML_FILE"},
         tables("LIBRARY", "library-wavelengths")},
        {"abundances",
         {},
         {"", "--rmse", "--html"},
         {"OUTPUT", "OUTPUT_RMSE", "OUTPUT_HTML_FILE"},
         endmemberTables}};
    int refused = 0;
    for (const Command& command : commands)
      for (const Table& table : command.tables)
        for (const QString& file : table.files)
          for (int o = 0; o < command.outputs.size(); ++o) {
            const QString& option = command.outputs[o];
            QStringList arguments{command.name, scene};
            arguments << table.arguments.front();
            arguments << (option.isEmpty() ? file : dir + "/o.tif");
            arguments << table.arguments.mid(1) << command.extra;
            if (!option.isEmpty()) arguments << option << file;
            arguments << "--format"
                      << "GTiff";
            const QString reader =
                file.endsWith("wave.txt") ? table.wavelengthParameter : table.parameter;
            expectRefused(arguments, command.outputParameters[o],
                          "read by this run (" + reader + ")", dir);
            ++refused;
          }
    qInfo("%d outputs refused", refused);
  }

  // Every writer on a full disk (a small tmpfs, filled to its last 4 KiB: root only): each run
  // fails naming the output, the file it would have replaced is left as it was, and no hidden
  // working folder stays behind. Rasters, tables (CSV), points (GeoJSON, GeoPackage), reports.
  void writersOnAFullDisk() {
    const QString dir = sceneFolder();
    const QString scene = dir + "/scene.tif";
    expectRuns({"endmembers", scene, dir + "/em.csv", "--count", "3"});
    const QString full = dir + "/full";
    QDir().mkpath(full);
    QProcess mount;
    mount.start("mount", {"-t", "tmpfs", "-o", "size=256k", "tmpfs", full});
    if (!mount.waitForFinished() || mount.exitCode() != 0)
      QSKIP("cannot mount a small tmpfs here (root only): the full-disk checks need one");
    struct Unmount {
      QString path;
      ~Unmount() { QProcess::execute("umount", {path}); }
    } unmount{full};
    const QStringList outputs{"e.csv", "p.geojson", "p.gpkg", "r.html",
                              "c.csv", "s.json",    "t.csv",  "o.tif"};
    for (const QString& name : outputs) {
      QFile old(full + "/" + name);
      QVERIFY(old.open(QIODevice::WriteOnly));
      old.write("the file before the run\n");
    }
    QFile filler(full + "/filler");
    QVERIFY(filler.open(QIODevice::WriteOnly | QIODevice::Unbuffered));
    const QByteArray block(1024, 'x');
    while (filler.write(block) == block.size()) {
    }
    const QString elsewhere = dir + "/elsewhere.tif";
    const std::vector<std::pair<QStringList, QString>> runs{
        {{"endmembers", scene, full + "/e.csv", "--count", "3"}, "OUTPUT"},
        {{"endmembers", scene, dir + "/e2.csv", "--count", "3", "--points", full + "/p.geojson"},
         "OUTPUT_POINTS"},
        {{"endmembers", scene, dir + "/e3.csv", "--count", "3", "--points", full + "/p.gpkg"},
         "OUTPUT_POINTS"},
        {{"endmembers", scene, dir + "/e4.csv", "--count", "3", "--html", full + "/r.html"},
         "OUTPUT_HTML_FILE"},
        {{"sam", scene, dir + "/em.csv", elsewhere, "--counts", full + "/c.csv"}, "OUTPUT_COUNTS"},
        {{"pca", scene, elsewhere, "--components", "3", "--stats", full + "/s.json"},
         "OUTPUT_STATS"},
        {{"pca", scene, elsewhere, "--components", "3", "--table", full + "/t.csv"},
         "OUTPUT_TABLE"},
        {{"rx", scene, full + "/o.tif"}, "OUTPUT"},
        {{"rx", scene, full + "/o.tif", "--per-column"}, "OUTPUT"},
        {{"detect", scene, dir + "/em.csv", full + "/o.tif", "--method", "mf"}, "OUTPUT"},
        {{"sam", scene, dir + "/em.csv", full + "/o.tif"}, "OUTPUT"},
        {{"abundances", scene, dir + "/em.csv", full + "/o.tif"}, "OUTPUT"},
        {{"spp", scene, full + "/o.tif"}, "OUTPUT"}};
    bool roomLeft = false;
    for (const auto& [arguments, parameter] : runs) {
      // The small writers on a disk with no room left, the rasters (8 KiB and more) with 4 KiB:
      // they fail while finishing, not in the check before the work.
      const bool raster = arguments[2].endsWith("o.tif") || arguments[3].endsWith("o.tif");
      if (raster && !roomLeft) roomLeft = filler.resize(filler.size() - 4096);
      QFile::remove(elsewhere);
      expectRefused(arguments, parameter, "", full);
    }
    // Local RX's own components file, which the user never named, is said for what it is.
    expectRefused({"rx", scene, full + "/o.tif", "--window", "5", "--components", "3"}, "OUTPUT",
                  "temporary file of components", full);
  }

  // Messages that named the wrong parameter, or none: one component for local RX (its
  // components file had "at least two bands"), a wavelength file beside a table that gives its
  // own bands, statistics asked of per-column and local RX (which fit no image-wide covariance).
  void messagesNameWhatTheUserGave() {
    const QString dir = sceneFolder();
    const QString scene = dir + "/scene.tif";
    expectRuns({"endmembers", scene, dir + "/em.csv", "--count", "3"});
    QFile wavelengths(dir + "/wave.txt");
    QVERIFY(wavelengths.open(QIODevice::WriteOnly));
    wavelengths.write("splib07a Wavelengths\n0.4\n0.5\n");
    wavelengths.close();
    expectRefused({"rx", scene, dir + "/o.tif", "--window", "5", "--components", "1"}, "COMPONENTS",
                  "2 to 64", dir);
    expectRefused({"detect", scene, dir + "/em.csv", dir + "/o.tif", "--method", "mf",
                   "--target-wavelengths", dir + "/wave.txt"},
                  "TARGET_WAVELENGTHS", "leave the wavelength file out", dir);
    expectRefused({"rx", scene, dir + "/o.tif", "--per-column", "--stats", dir + "/s.json"},
                  "OUTPUT_STATS", "no image-wide covariance", dir);
    expectRefused({"rx", scene, dir + "/o.tif", "--window", "5", "--stats", dir + "/s.json"},
                  "OUTPUT_STATS", "no image-wide covariance", dir);
    expectRefused({"detect", scene, "/dev/null", dir + "/o.tif", "--method", "mf"}, "TARGETS",
                  "a device", dir);
  }

  // inverse takes only the statistics of the fit that wrote the components.
  void inverseRefusesStatisticsOfAnotherFit() {
    const QString dir = sceneFolder();
    const QString scene = dir + "/scene.tif";
    expectRuns({"pca", scene, dir + "/p.tif", "--components", "5", "--stats", dir + "/p.json"});
    expectRuns({"pca", scene, dir + "/pb.tif", "--components", "5", "--type", "byte", "--stats",
                dir + "/pb.json"});
    expectRuns({"mnf", scene, dir + "/m.tif", "--components", "5", "--stats", dir + "/m.json"});
    expectRuns({"pca", dir + "/other.tif", dir + "/q.tif", "--components", "5", "--stats",
                dir + "/q.json"});
    expectRefused({"inverse", dir + "/pb.tif", dir + "/p.json", dir + "/r.tif"}, "STATS",
                  "no Byte ranges", dir);
    expectRefused({"inverse", dir + "/p.tif", dir + "/m.json", dir + "/r.tif"}, "STATS",
                  "written by a PCA, the statistics are an MNF's", dir);
    expectRefused({"inverse", dir + "/m.tif", dir + "/p.json", dir + "/r.tif"}, "STATS",
                  "written by an MNF", dir);
    expectRefused({"inverse", dir + "/p.tif", dir + "/q.json", dir + "/r.tif"}, "STATS",
                  "another fit", dir);
    // Byte components whose recorded ranges are not the statistics' ones.
    QVERIFY(QFile::copy(dir + "/pb.tif", dir + "/pb2.tif"));
    {
      GDALAllRegister();
      GDALDatasetUniquePtr edited(GDALDataset::Open((dir + "/pb2.tif").toUtf8().constData(),
                                                    GDAL_OF_RASTER | GDAL_OF_UPDATE));
      QVERIFY(edited);
      const QString ranges = edited->GetMetadataItem("HYPERSTREAM_BYTE_RANGES");
      QVERIFY(ranges.count(':') == 5);
      edited->SetMetadataItem("HYPERSTREAM_BYTE_RANGES",
                              QString(ranges).replace(0, 1, "0.5").toUtf8().constData());
    }
    expectRefused({"inverse", dir + "/pb2.tif", dir + "/pb.json", dir + "/r.tif"}, "STATS",
                  "other ranges", dir);
    // The right pairs, and components that apply wrote with the statistics it applied.
    expectRuns({"inverse", dir + "/p.tif", dir + "/p.json", dir + "/r1.tif"});
    expectRuns({"inverse", dir + "/pb.tif", dir + "/pb.json", dir + "/r2.tif"});
    expectRuns({"inverse", dir + "/m.tif", dir + "/m.json", dir + "/r3.tif"});
    expectRuns({"apply", dir + "/pb.json", dir + "/other.tif", dir + "/ab.tif", "--type", "byte",
                "--components", "3"});
    expectRuns({"inverse", dir + "/ab.tif", dir + "/pb.json", dir + "/r4.tif"});
  }

  // Alpha, rho and RMSE are written in the format their own names call for; a format that
  // writes no file is refused before any work.
  void secondaryOutputsFollowTheirExtension() {
    const QString dir = sceneFolder();
    const QString scene = dir + "/scene.tif";
    expectRuns({"spp", scene, dir + "/s.img", "--alpha", dir + "/a.tif", "--rho", dir + "/r.rst"});
    auto driverOf = [](const QString& path) {
      GDALAllRegister();
      GDALDatasetUniquePtr dataset(GDALDataset::Open(path.toUtf8().constData(), GDAL_OF_RASTER));
      return dataset ? QString(dataset->GetDriver()->GetDescription()) : QString();
    };
    QCOMPARE(driverOf(dir + "/s.img"), QString("HFA"));
    QCOMPARE(driverOf(dir + "/a.tif"), QString("GTiff"));
    QCOMPARE(driverOf(dir + "/r.rst"), QString("RST"));
    expectRuns({"endmembers", scene, dir + "/em.csv", "--count", "3"});
    expectRefused({"abundances", scene, dir + "/em.csv", dir + "/ab.tif", "--rmse", dir + "/r.jpg"},
                  "OUTPUT_RMSE", "no GDAL driver creates '.jpg' files", dir);
    expectRefused({"spp", scene, dir + "/s2.tif", "--alpha", dir + "/a.vrt"}, "OUTPUT_ALPHA",
                  "VRT driver cannot write the pixels", dir);
    expectRefused({"pca", scene, dir + "/m.tif", "--format", "MEM"}, "OUTPUT", "writes no file",
                  dir);
    // Creation options go to outputs of OUTPUT's driver only.
    expectRuns({"abundances", scene, dir + "/em.csv", dir + "/ab.tif", "--rmse", dir + "/rm.img",
                "--co", "COMPRESS=DEFLATE"});
    QCOMPARE(driverOf(dir + "/rm.img"), QString("HFA"));
  }

  // Output names up to the file system's limit: the hidden folder's name once ran past it from
  // ~232 characters on. An averaging window larger than the image is refused, not ignored.
  void longNamesAndWindowsThatDoNotFit() {
    const QString dir = sceneFolder();
    const QString scene = dir + "/scene.tif";
    const QString name = dir + "/" + QString(246, 'n');
    expectRuns({"pca", scene, name + ".tif", "--components", "3", "--stats", name + ".jsn",
                "--html", name + ".htm"});
    QVERIFY(QFile::exists(name + ".tif") && QFile::exists(name + ".jsn"));
    expectRuns({"inverse", name + ".tif", name + ".jsn", name + ".img", "--format", "HFA"});
    expectRuns({"synth", dir + "/row.tif", "--rows", "1", "--cols", "60", "--bands", "12"});
    expectRefused(
        {"endmembers", dir + "/row.tif", dir + "/em.csv", "--count", "3", "--average-window", "5"},
        "AVERAGE_WINDOW", "does not fit an image of 60 x 1 pixels", dir);
  }

  // Data from 1e-300 to 1e300: the right answer where float64 products hold it, else an INPUT
  // error naming the problem; never a silent all-zero component or a bare LAPACK code.
  void tinyAndHugeValues() {
    const QString dir = testing::tempDir();
    const testing::Cube base = testing::smoothScene(30, 40, 12, 5);
    auto scaled = [&](const QString& name, double factor) {
      testing::Cube cube = base;
      for (double& v : cube.values) v *= factor;
      testing::writeCube(cube, (dir + "/" + name).toStdString(), GDT_Float64);
      return dir + "/" + name;
    };
    const QString tiny = scaled("tiny.tif", 1e-300), huge = scaled("huge.tif", 1e160);
    const QString zero = scaled("zero.tif", 0.0);
    for (const QStringList& job :
         {QStringList{"pca"}, QStringList{"mnf"}, QStringList{"denoise"}, QStringList{"spp"}}) {
      expectRefused(QStringList{job[0], tiny, dir + "/o.tif"}, "INPUT", "too ", dir);
      if (job[0] != "spp")
        expectRefused(QStringList{job[0], huge, dir + "/o.tif"}, "INPUT", "too large", dir);
    }
    // Detection in each of its modes names the band, as PCA does (per column: its column).
    for (const QStringList& mode :
         {QStringList{"--components", "all"}, QStringList{"--components", "all", "--per-column"},
          QStringList{"--components", "5", "--window", "5"}}) {
      expectRefused(QStringList{"rx", tiny, dir + "/o.tif"} + mode, "INPUT", "selected band number",
                    dir);
      expectRefused(QStringList{"rx", huge, dir + "/o.tif"} + mode, "INPUT", "too large", dir);
    }
    for (const char* method : {"vca", "nfindr", "atgp"}) {
      expectRefused({"endmembers", tiny, dir + "/em.csv", "--count", "3", "--method", method},
                    "INPUT", "too small", dir);
      expectRefused({"endmembers", huge, dir + "/em.csv", "--count", "3", "--method", method},
                    "INPUT", "too large", dir);
      expectRefused({"endmembers", zero, dir + "/em.csv", "--count", "3", "--method", method},
                    "INPUT", "nothing to unmix", dir);
    }
    // Scaled by 1e-100 the variances are 1e-200 of the scene's: the same fit, to rounding.
    const QString small = scaled("small.tif", 1e-100);
    expectRuns({"pca", small, dir + "/small_pcs.tif", "--components", "all", "--stats",
                dir + "/small.json"});
    std::vector<double> expected = testing::referencePca(base).eigenvalues;
    std::vector<double> got;
    for (const QJsonValue v : readJson(dir + "/small.json")["eigenvalues"].toArray())
      got.push_back(v.toDouble() * 1e200);
    QCOMPARE(got.size(), expected.size());
    QVERIFY(testing::maxRelativeDifference(got, expected) < 1e-6);
    expectRuns({"endmembers", small, dir + "/small.csv", "--count", "4", "--method", "atgp"});
    const QString unscaled = scaled("unscaled.tif", 1.0);
    expectRuns({"endmembers", unscaled, dir + "/unscaled.csv", "--count", "4", "--method", "atgp"});
    auto pixels = [](const QString& csv) {
      QFile file(csv);
      QStringList rows;
      if (file.open(QIODevice::ReadOnly))
        for (const QByteArray& line : file.readAll().split('\n'))
          rows << QString(line).section(',', 1, 2);
      return rows;
    };
    QCOMPARE(pixels(dir + "/small.csv"), pixels(dir + "/unscaled.csv"));
  }

  // A pipe, a folder or a device as an input (or as a sidecar GDAL would open) is refused before
  // anything opens it: opening a FIFO would wait for a writer forever.
  void inputsThatAreNotFilesAreRefused() {
    const QString dir = sceneFolder();
    const QString scene = dir + "/scene.tif";
    expectRuns({"pca", scene, dir + "/p.tif", "--components", "5", "--stats", dir + "/p.json"});
    expectRuns({"endmembers", scene, dir + "/em.csv", "--count", "3"});
    const QString fifo = dir + "/fifo";
    QCOMPARE(mkfifo(fifo.toUtf8().constData(), 0600), 0);
    const QString pipe = "a pipe (FIFO)";
    expectRefused({"pca", fifo, dir + "/o.tif"}, "INPUT", pipe, dir);
    expectRefused({"apply", fifo, scene, dir + "/o.tif"}, "STATS", pipe, dir);
    expectRefused({"inverse", dir + "/p.tif", fifo, dir + "/o.tif"}, "STATS", pipe, dir);
    expectRefused({"abundances", scene, fifo, dir + "/o.tif"}, "ENDMEMBERS", pipe, dir);
    expectRefused({"endmembers", scene, dir + "/o.csv", "--count", "3", "--locations-from", fifo},
                  "LOCATIONS", pipe, dir);
    expectRefused({"pca", dir, dir + "/o.tif"}, "INPUT", "a folder", dir);
    expectRefused({"apply", "/dev/zero", scene, dir + "/o.tif"}, "STATS", "a device", dir);
    // A sidecar GDAL reads while opening the input.
    QCOMPARE(mkfifo((scene + ".aux.xml").toUtf8().constData(), 0600), 0);
    expectRefused({"pca", scene, dir + "/o.tif"}, "INPUT", "GDAL reads with", dir);
  }
};

QTEST_GUILESS_MAIN(HardeningTests)
#include "test_hardening.moc"
