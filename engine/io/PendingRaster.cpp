#include "io/PendingRaster.h"

#include "core/Error.h"
#include "io/SpectralMetadata.h"

#include <cpl_string.h>
#include <ogrsf_frmts.h>

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QSysInfo>

#include <QThread>
#include <algorithm>
#include <filesystem>
#include <numeric>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace hyperstream {

namespace {

// The hidden folder and all in it.
void removeFolder(const std::string& folder) {
  std::error_code ignored;
  std::filesystem::remove_all(folder, ignored);
}

std::string absolute(const std::string& path) {
  return QDir::cleanPath(QFileInfo(QString::fromStdString(path)).absoluteFilePath()).toStdString();
}

CPLStringList creationOptionList(const RasterFormat& format) {
  CPLStringList options;
  for (const std::string& option : format.creationOptions) {
    const size_t equals = option.find('=');
    if (equals == std::string::npos || equals == 0)
      throw Error("CREATION_OPTIONS", "creation option '" + option + "' is not NAME=VALUE");
    options.SetNameValue(option.substr(0, equals).c_str(), option.substr(equals + 1).c_str());
  }
  const std::string driver = format.driver->GetDescription();
  if (driver == "GTiff" && !options.FetchNameValue("BIGTIFF"))
    options.SetNameValue("BIGTIFF", "IF_SAFER");
  // Compressing is the writer's slowest part: GDAL compresses the blocks of this dataset on every
  // core unless the user says otherwise.
  const char* compress = options.FetchNameValue("COMPRESS");
  if (driver == "GTiff" && compress && !EQUAL(compress, "NONE") &&
      !options.FetchNameValue("NUM_THREADS"))
    options.SetNameValue("NUM_THREADS", std::to_string(QThread::idealThreadCount()).c_str());
  QuietGdalErrors quiet;
  CPLErrorReset();
  if (!GDALValidateCreationOptions(GDALDriver::ToHandle(format.driver), options.List()))
    throw Error("CREATION_OPTIONS",
                std::string(CPLGetLastErrorMsg()) + " (GDAL's " + driver + " driver)");
  return options;
}

}  // namespace

// A new hidden folder beside `destination`, unique to its caller; registered before it is made,
// so that a signal arriving just after leaves nothing behind. Its name starts with at most 40
// characters of the destination's, so that it stays within the 255 bytes a name may have
// whatever the destination's (up to 255 bytes itself).
std::string makePendingFolder(const std::string& destination, PendingFiles& pending) {
  const QFileInfo info(QString::fromStdString(destination));
  const QDir parent = info.absoluteDir();
  for (int attempt = 0; attempt < 16; ++attempt) {
    const QString name =
        QString(".%1.part-%2-%3-%4")
            .arg(info.fileName().left(40), QString::fromStdString(PendingRaster::hostTag()))
            .arg(QCoreApplication::applicationPid())
            .arg(QRandomGenerator::global()->generate(), 8, 16, QChar('0'));
    pending.add(parent.filePath(name).toStdString());
    if (parent.mkdir(name)) return parent.filePath(name).toStdString();
    if (!parent.exists() || !QFileInfo(parent.path()).isWritable()) break;
  }
  throw Error("OUTPUT", "cannot create a temporary folder in '" + parent.path().toStdString() +
                            "' for '" + destination + "': " + std::strerror(errno));
}

void checkCreationOptions(const RasterFormat& format) {
  creationOptionList(format);
}

std::string PendingRaster::hostTag() {
  std::string host = QSysInfo::machineHostName().toStdString();
  for (char& c : host)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return host.empty() ? "host" : host.substr(0, 64);
}

bool PendingRaster::isPendingFolderName(const std::string& name, int64_t* pid, std::string* host) {
  static const QRegularExpression pattern(
      QStringLiteral("^\\.(.+)\\.part-([A-Za-z0-9_]+)-(\\d+)-([0-9a-f]{8})$"));
  const QRegularExpressionMatch match = pattern.match(QString::fromStdString(name));
  if (!match.hasMatch()) return false;
  if (pid) *pid = match.captured(3).toLongLong();
  if (host) *host = match.captured(2).toStdString();
  return true;
}

PendingRaster::PendingRaster(const std::string& destination, const RasterFormat& format,
                             int64_t width, int64_t height, int bands, GDALDataType type)
    : destination_(destination), driver_(format.driver) {
  const CPLStringList options = creationOptionList(format);
  folder_ = makePendingFolder(destination, pending_);
  temporary_ =
      folder_ + "/" + QFileInfo(QString::fromStdString(destination)).fileName().toStdString();
  createOrDiscard(width, height, bands, type, options);
}

PendingRaster::PendingRaster(const std::string& destination, const RasterFormat& format,
                             int64_t width, int64_t height, int bands, GDALDataType type,
                             std::shared_ptr<const Orthorectification> orthorectification)
    : destination_(destination),
      driver_(GetGDALDriverManager()->GetDriverByName("GTiff")),
      orthorectification_(std::move(orthorectification)),
      mapFormat_(format) {
  creationOptionList(format);  // checked now, not at the end
  folder_ = makePendingFolder(destination, pending_);
  temporary_ = folder_ + "/image-geometry.tif";
  mapTemporary_ =
      folder_ + "/" + QFileInfo(QString::fromStdString(destination)).fileName().toStdString();
  pending_.add(mapTemporary_);
  pending_.add(mapTemporary_ + ".aux.xml");
  CPLStringList options;
  options.SetNameValue("BIGTIFF", "IF_SAFER");
  createOrDiscard(width, height, bands, type, options);
}

// A constructor that throws runs no destructor: what it made goes here.
void PendingRaster::createOrDiscard(int64_t width, int64_t height, int bands, GDALDataType type,
                                    const CPLStringList& options) {
  try {
    create(width, height, bands, type, options);
  } catch (...) {
    discard();
    throw;
  }
}

void PendingRaster::create(int64_t width, int64_t height, int bands, GDALDataType type,
                           const CPLStringList& options) {
  pending_.add(temporary_);
  pending_.add(temporary_ + ".aux.xml");
  QuietGdalErrors quiet;
  CPLErrorReset();
  dataset_.reset(driver_->Create(temporary_.c_str(), static_cast<int>(width),
                                 static_cast<int>(height), bands, type, options.List()));
  if (!dataset_) {
    const std::string reason = gdalErrorText();
    removeFolder(folder_);
    if (quiet.outOfMemory()) throw outOfMemory("while creating '" + destination_ + "'");
    throw Error("OUTPUT", "cannot create '" + destination_ + "' with GDAL's " +
                              driver_->GetDescription() + " driver" +
                              (reason.empty() ? "" : ": " + reason));
  }
  char** files = dataset_->GetFileList();
  for (char** f = files; f && *f; ++f) pending_.add(*f);
  CSLDestroy(files);
  type_ = type;
  startRawWriting(options, type);
}

// An uncompressed GeoTIFF or ENVI file, closed while it is new (GDAL then places every block by
// extending the file, writing nothing) and opened again for update, takes its samples from a
// RawWriter; other files go through GDAL's RasterIO.
void PendingRaster::startRawWriting(const CPLStringList& options, GDALDataType type) {
  const std::string driver = driver_->GetDescription();
  const char* compress = options.FetchNameValue("COMPRESS");
  const bool raw =
      driver == "ENVI" || (driver == "GTiff" && (!compress || EQUAL(compress, "NONE")));
  if (!raw) return;
  reopen();
  raw_ = RawWriter::open(*dataset_, type, destination_);
}

void PendingRaster::write(int64_t row0, int64_t rows, const void* strip, const Feedback& feedback) {
  if (!raw_) {
    writeStrip(*dataset_, type_, row0, rows, strip, feedback);
    return;
  }
  rawWritten_ = true;
  raw_->write(row0, rows, static_cast<const unsigned char*>(strip), feedback);
}

GDALDataset& PendingRaster::dataset() {
  if (rawWritten_) {  // GDAL's handle may still hold bytes it read before those rows came
    rawWritten_ = false;
    raw_->flush();
    reopen();
  }
  return *dataset_;
}

PendingRaster::~PendingRaster() {
  if (!committed_) discard();
}

void PendingRaster::discard() {
  raw_.reset();
  QuietGdalErrors quiet;
  // Closing fills every block never written, with the nodata value where there is one: for a
  // canceled GeoTIFF of gigabytes, a second of writing before it is deleted. Without a nodata
  // value GDAL only extends the file; marked for deletion, it then only removes it.
  if (dataset_) {
    for (int b = 1; b <= dataset_->GetRasterCount(); ++b)
      dataset_->GetRasterBand(b)->DeleteNoDataValue();
    dataset_->MarkSuppressOnClose();
  }
  dataset_.reset();
  removeFolder(folder_);
}

DatasetPtr openForUpdate(const std::string& path, const std::string& parameter) {
  QuietGdalErrors quiet;
  CPLErrorReset();
  DatasetPtr dataset(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_UPDATE));
  if (!dataset)
    throw Error(parameter, "cannot open '" + path + "' for writing: " + CPLGetLastErrorMsg());
  return dataset;
}

RasterFormat formatBeside(const RasterFormat& main, const std::string& parameter,
                          const std::string& path, const std::string& format) {
  RasterFormat beside;
  try {
    beside.driver = outputDriver(path, format);
  } catch (const Error& error) {
    throw Error(error.parameter() == "OUTPUT" ? parameter : error.parameter(), error.what());
  }
  if (beside.driver == main.driver) beside.creationOptions = main.creationOptions;
  return beside;
}

std::vector<std::string> existingDatasetFiles(const std::string& path) {
  const QFileInfo info(QString::fromStdString(path));
  if (!info.exists() && !info.isSymLink()) return {};
  if (!info.isFile()) return {path};  // never opened: a FIFO would block
  ensureGdalDrivers();
  QuietGdalErrors quiet;
  DatasetPtr dataset(GDALDataset::FromHandle(
      GDALOpenEx(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY, nullptr, nullptr, nullptr)));
  std::vector<std::string> files{path};
  if (!dataset) return files;
  char** list = dataset->GetFileList();
  for (char** f = list; f && *f; ++f)
    if (absolute(*f) != absolute(path)) files.emplace_back(*f);
  CSLDestroy(list);
  return files;
}

void PendingRaster::reopen() {
  close();
  dataset_ = openForUpdate(temporary_, "OUTPUT");
}

void PendingRaster::close() {
  QuietGdalErrors quiet;
  CPLErrorReset();
  // ENVI records the dataset's description in its header, by default the file it was created
  // as: the hidden temporary name.
  if (EQUAL(driver_->GetDescription(), "ENVI")) dataset_->SetDescription(destination_.c_str());
  dataset_->FlushCache(true);
  std::vector<GIntBig> features;  // per layer of a vector output
  features.reserve(static_cast<size_t>(dataset_->GetLayerCount()));
  for (int l = 0; l < dataset_->GetLayerCount(); ++l)
    features.push_back(dataset_->GetLayer(l)->GetFeatureCount());
  dataset_.reset();  // closing writes headers and sidecar files
  if (CPLGetLastErrorType() >= CE_Failure) {
    if (quiet.outOfMemory()) throw outOfMemory("while finishing '" + destination_ + "'");
    throw Error("OUTPUT", "cannot finish writing '" + destination_ + "': " + CPLGetLastErrorMsg());
  }
  if (!features.empty()) checkFeaturesWritten(features);
}

// Vector drivers (GeoJSON) write on closing and may say nothing when the disk is full: the file
// must read back with every feature.
void PendingRaster::checkFeaturesWritten(const std::vector<GIntBig>& features) const {
  const DatasetPtr written(GDALDataset::FromHandle(GDALOpenEx(
      temporary_.c_str(), GDAL_OF_VECTOR | GDAL_OF_READONLY, nullptr, nullptr, nullptr)));
  bool complete = written && written->GetLayerCount() == static_cast<int>(features.size());
  for (size_t l = 0; complete && l < features.size(); ++l)
    complete = written->GetLayer(static_cast<int>(l))->GetFeatureCount() == features[l];
  if (!complete)
    throw Error("OUTPUT", "cannot finish writing '" + destination_ +
                              "': it does not read back whole (is the disk full?)");
}

std::vector<std::string> PendingRaster::folderFiles() const {
  std::vector<std::string> files;
  const QDir folder(QString::fromStdString(folder_));
  for (const QString& name : folder.entryList(QDir::Files | QDir::Hidden | QDir::System))
    files.push_back(folder.filePath(name).toStdString());
  return files;
}

std::vector<std::string> PendingRaster::closeAndListFiles() {
  close();
  const QDir target = QFileInfo(QString::fromStdString(destination_)).absoluteDir();
  std::vector<std::string> files;
  for (const std::string& file : folderFiles())
    files.push_back(
        target.filePath(QFileInfo(QString::fromStdString(file)).fileName()).toStdString());
  return files;
}

// The image-geometry raster, closed, onto the GLT's map grid in the destination's format, with
// its metadata; the map grid's file then takes the image's place.
void PendingRaster::writeMapGrid() {
  const Glt& glt = *orthorectification_->glt;
  DatasetPtr image = openRaster(temporary_, "OUTPUT");
  const int bands = image->GetRasterCount();
  const GDALDataType type = image->GetRasterBand(1)->GetRasterDataType();
  driver_ = mapFormat_.driver;
  {
    QuietGdalErrors quiet;
    CPLErrorReset();
    dataset_.reset(driver_->Create(mapTemporary_.c_str(), static_cast<int>(glt.width),
                                   static_cast<int>(glt.height), bands, type,
                                   creationOptionList(mapFormat_).List()));
    if (!dataset_)
      throw Error("OUTPUT", "cannot create '" + destination_ +
                                "' on the GLT's grid: " + CPLGetLastErrorMsg());
  }
  char** files = dataset_->GetFileList();
  for (char** f = files; f && *f; ++f) pending_.add(*f);
  CSLDestroy(files);
  GDALSetGeoTransform(GDALDataset::ToHandle(dataset_.get()),
                      const_cast<double*>(glt.geoTransform.data()));
  if (!glt.crsWkt.empty()) dataset_->SetProjection(glt.crsWkt.c_str());
  dataset_->SetMetadata(image->GetMetadata());
  for (int b = 1; b <= bands; ++b) {
    GDALRasterBand* from = image->GetRasterBand(b);
    GDALRasterBand* to = dataset_->GetRasterBand(b);
    to->SetDescription(from->GetDescription());
    to->SetMetadata(from->GetMetadata());
    int hasNodata = 0;
    const double nodata = from->GetNoDataValue(&hasNodata);
    to->SetNoDataValue(hasNodata ? nodata : mapNodata(type));
  }
  // Wavelengths in the other domains too (IMAGERY, an ENVI header's lists).
  const SpectralMetadata spectral = readSpectralMetadata(*image, temporary_);
  std::vector<int> all(static_cast<size_t>(bands));
  std::iota(all.begin(), all.end(), 1);
  writeSpectralMetadata(*dataset_,
                        bandSpectraOf(spectral.wavelengths, spectral.fwhm, spectral.good, all));
  orthorectify(*image, glt, *dataset_, orthorectification_->ramBytes);
  image.reset();
  std::remove(temporary_.c_str());
  std::remove((temporary_ + ".aux.xml").c_str());
  temporary_ = mapTemporary_;
  close();
}

void PendingRaster::commit() {
  if (raw_) raw_->close();
  close();
  if (orthorectification_) writeMapGrid();
  std::vector<std::string> replaced = existingDatasetFiles(destination_);
  replaced.push_back(destination_ + ".aux.xml");  // GDAL's sidecar, even of what it cannot open
  const QDir target = QFileInfo(QString::fromStdString(destination_)).absoluteDir();
  std::vector<std::string> written;
  auto move = [&](const std::string& from, const std::string& to) {
    if (std::rename(from.c_str(), to.c_str()) != 0)
      throw Error("OUTPUT",
                  "cannot move the finished raster to '" + to + "': " + std::strerror(errno));
    written.push_back(absolute(to));
  };
  // The main file first: it replaces the destination's atomically.
  move(temporary_, destination_);
  for (const std::string& file : folderFiles())
    move(file, target.filePath(QFileInfo(QString::fromStdString(file)).fileName()).toStdString());
  for (const std::string& file : replaced)
    if (std::find(written.begin(), written.end(), absolute(file)) == written.end())
      std::remove(file.c_str());
  QDir().rmdir(QString::fromStdString(folder_));
  committed_ = true;
}

std::unique_ptr<PendingRaster> createLike(const RasterInfo& input, const std::string& destination,
                                          const RasterFormat& format, int bands,
                                          GDALDataType type) {
  auto raster =
      input.orthorectification
          ? std::make_unique<PendingRaster>(destination, format, input.width, input.height, bands,
                                            type, input.orthorectification)
          : std::make_unique<PendingRaster>(destination, format, input.width, input.height, bands,
                                            type);
  GDALDataset& dataset = raster->dataset();
  if (input.hasGeoTransform)
    GDALSetGeoTransform(GDALDataset::ToHandle(&dataset),
                        const_cast<double*>(input.geoTransform.data()));
  if (!input.crsWkt.empty()) dataset.SetProjection(input.crsWkt.c_str());
  return raster;
}

// Creation options for an output that several processes write at once, each its own rows: only
// raw layouts whose blocks never straddle two processes' rows (GeoTIFF strips of one row,
// uncompressed and untiled; ENVI).
std::vector<std::string> sharedWritingOptions(GDALDriver* driver,
                                              std::vector<std::string> creationOptions) {
  const std::string format = driver->GetDescription();
  if (format == "ENVI") return creationOptions;
  if (format != "GTiff")
    throw Error("OUTPUT",
                "under MPI every rank writes its rows into one file, which needs a "
                "GeoTIFF or ENVI output, not " +
                    format);
  for (const std::string& option : creationOptions) {
    const QString text = QString::fromStdString(option).toUpper();
    const bool raw = text.startsWith("COMPRESS=")     ? text == "COMPRESS=NONE"
                     : text.startsWith("TILED=")      ? text == "TILED=NO" || text == "TILED=FALSE"
                     : text.startsWith("BLOCKYSIZE=") ? text == "BLOCKYSIZE=1"
                                                      : true;
    if (!raw)
      throw Error("CREATION_OPTIONS",
                  "'" + option +
                      "' cannot be used under MPI: every rank writes its own rows "
                      "into one file, which needs an uncompressed GeoTIFF in strips of one row");
  }
  creationOptions.push_back("BLOCKYSIZE=1");
  return creationOptions;
}

}  // namespace hyperstream
