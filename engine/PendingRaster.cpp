#include "PendingRaster.h"

#include "Error.h"

#include <cpl_string.h>

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRandomGenerator>

#include <cstdio>

namespace hyperstream {

namespace {

std::string canonical(const std::string& path) {
  const QFileInfo info(QString::fromStdString(path));
  const QString resolved = info.exists() ? info.canonicalFilePath() : info.absoluteFilePath();
  return QDir::cleanPath(resolved).toStdString();
}

std::vector<std::string> datasetFiles(GDALDataset& dataset) {
  std::vector<std::string> files;
  char** list = dataset.GetFileList();
  for (char** f = list; f && *f; ++f) files.emplace_back(*f);
  CSLDestroy(list);
  return files;
}

}  // namespace

void checkOutputPath(const std::string& path, const std::vector<std::string>& taken,
                     const std::string& parameter) {
  if (path.empty()) throw Error(parameter, "no output file given");
  const std::string target = canonical(path);
  for (const std::string& file : taken)
    if (canonical(file) == target)
      throw Error(parameter, "'" + path + "' is the input or another output of this run: " +
                                 "choose another file name");
  const QFileInfo info(QString::fromStdString(path));
  if (info.isDir()) throw Error(parameter, "the output '" + path + "' is a folder");
  const QFileInfo folder(info.absolutePath());
  if (!folder.isDir())
    throw Error(parameter,
                "the output folder '" + folder.filePath().toStdString() + "' does not exist");
  if (!folder.isWritable())
    throw Error(parameter,
                "the output folder '" + folder.filePath().toStdString() + "' is not writable");
}

std::string PendingRaster::temporaryPathFor(const std::string& destination) {
  const QFileInfo info(QString::fromStdString(destination));
  const QString suffix = info.suffix().isEmpty() ? QString() : "." + info.suffix();
  const QString name = QString(".%1.part-%2-%3%4")
                           .arg(info.completeBaseName())
                           .arg(QCoreApplication::applicationPid())
                           .arg(QRandomGenerator::global()->generate(), 8, 16, QChar('0'))
                           .arg(suffix);
  return info.absoluteDir().filePath(name).toStdString();
}

void checkOutputPaths(const std::vector<std::string>& inputFiles,
                      const std::vector<std::pair<std::string, std::string>>& outputs) {
  std::vector<std::string> taken = inputFiles;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& [parameter, path] = outputs[i];
    if (i > 0 && path.empty()) continue;  // an optional output not asked for
    checkOutputPath(path, taken, parameter);
    taken.push_back(path);
  }
}

PendingRaster::PendingRaster(const std::string& destination, GDALDriver* driver, int64_t width,
                             int64_t height, int bands, GDALDataType type,
                             const std::vector<std::string>& creationOptions,
                             const std::string& temporaryPath)
    : destination_(destination),
      temporary_(temporaryPath.empty() ? temporaryPathFor(destination) : temporaryPath),
      driver_(driver) {
  CPLStringList options;
  if (EQUAL(driver->GetDescription(), "GTiff")) options.SetNameValue("BIGTIFF", "IF_SAFER");
  for (const std::string& option : creationOptions) {
    const size_t equals = option.find('=');
    if (equals == std::string::npos || equals == 0)
      throw Error("CREATION_OPTIONS", "creation option '" + option + "' is not NAME=VALUE");
    options.SetNameValue(option.substr(0, equals).c_str(), option.substr(equals + 1).c_str());
  }
  QuietGdalErrors quiet;
  CPLErrorReset();
  dataset_.reset(driver->Create(temporary_.c_str(), static_cast<int>(width),
                                static_cast<int>(height), bands, type, options.List()));
  if (!dataset_) {
    const std::string reason = CPLGetLastErrorMsg();
    GDALDeleteDataset(GDALDriver::ToHandle(driver), temporary_.c_str());
    QFile::remove(QString::fromStdString(temporary_));
    throw Error("OUTPUT", "cannot create '" + destination + "' with GDAL's " +
                              driver->GetDescription() + " driver" +
                              (reason.empty() ? "" : ": " + reason));
  }
}

PendingRaster::~PendingRaster() {
  if (committed_) return;
  QuietGdalErrors quiet;
  std::vector<std::string> files;
  if (dataset_) files = datasetFiles(*dataset_);
  dataset_.reset();
  GDALDeleteDataset(GDALDriver::ToHandle(driver_), temporary_.c_str());
  for (const std::string& file : files) QFile::remove(QString::fromStdString(file));
  QFile::remove(QString::fromStdString(temporary_));
}

DatasetPtr openForUpdate(const std::string& path, const std::string& parameter) {
  QuietGdalErrors quiet;
  CPLErrorReset();
  DatasetPtr dataset(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_UPDATE));
  if (!dataset)
    throw Error(parameter, "cannot open '" + path + "' for writing: " + CPLGetLastErrorMsg());
  return dataset;
}

std::vector<std::string> PendingRaster::files() {
  return datasetFiles(*dataset_);
}

void PendingRaster::reopen() {
  QuietGdalErrors quiet;
  CPLErrorReset();
  dataset_.reset();
  if (CPLGetLastErrorType() >= CE_Failure)
    throw Error("OUTPUT", "cannot create '" + destination_ + "': " + CPLGetLastErrorMsg());
  dataset_ = openForUpdate(temporary_, "OUTPUT");
}

void PendingRaster::commit() {
  QuietGdalErrors quiet;
  CPLErrorReset();
  const std::vector<std::string> files = datasetFiles(*dataset_);
  dataset_->FlushCache(true);
  dataset_.reset();  // closing writes headers and sidecar files
  if (CPLGetLastErrorType() >= CE_Failure)
    throw Error("OUTPUT", "cannot finish writing '" + destination_ + "': " + CPLGetLastErrorMsg());
  // A single file replaces the destination atomically. A multi-file format (ENVI's data + .hdr)
  // replaces the old dataset's files first, then renames the new ones into place.
  bool moved = false;
  if (files.size() <= 1) {
    moved = std::rename(temporary_.c_str(), destination_.c_str()) == 0;
  } else {
    if (QFileInfo::exists(QString::fromStdString(destination_)))
      GDALDeleteDataset(GDALDriver::ToHandle(driver_), destination_.c_str());
    moved = driver_->Rename(destination_.c_str(), temporary_.c_str()) == CE_None;
  }
  if (!moved) throw Error("OUTPUT", "cannot move the finished raster to '" + destination_ + "'");
  committed_ = true;
}

}  // namespace hyperstream
