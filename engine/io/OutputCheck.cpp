#include "io/OutputCheck.h"

#include "core/Error.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

#include <signal.h>

#include <algorithm>
#include <cerrno>

namespace hyperstream {

namespace {

// The path with symbolic links and "." resolved, also for files that do not exist yet (through
// their folder), so that two names of one file compare equal.
std::string canonical(const std::string& path) {
  const QFileInfo info(QString::fromStdString(path));
  if (info.exists()) return info.canonicalFilePath().toStdString();
  const QString folder = QFileInfo(info.absolutePath()).canonicalFilePath();
  const QString base = folder.isEmpty() ? info.absolutePath() : folder;
  return QDir::cleanPath(base + "/" + info.fileName()).toStdString();
}

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// Throws unless `path` names a file that can be created: given, not a folder, in a folder that
// exists and is writable.
void checkFolder(const std::string& parameter, const std::string& path) {
  if (path.empty()) throw Error(parameter, "no output file given");
  const QFileInfo info(QString::fromStdString(path));
  if (info.isDir()) throw Error(parameter, "the output '" + path + "' is a folder");
  // Before anything opens it: opening a FIFO blocks until somebody writes to it.
  if ((info.exists() || info.isSymLink()) && !info.isFile())
    throw Error(parameter, "'" + path +
                               "' exists and is not a regular file (a device, pipe or socket): "
                               "choose another output name");
  const QFileInfo folder(info.absolutePath());
  if (!folder.isDir())
    throw Error(parameter,
                "the output folder '" + folder.filePath().toStdString() + "' does not exist");
  if (!folder.isWritable())
    throw Error(parameter,
                "the output folder '" + folder.filePath().toStdString() + "' is not writable");
}

bool processIsGone(int64_t pid) {
  return pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// The files a raster driver writes for `path`: found by writing a one-pixel raster with the
// same format, bands and type in a pending folder, then discarding it.
std::vector<std::string> filesWrittenFor(const std::string& parameter, const std::string& path,
                                         const RasterFormat& format, int bands, GDALDataType type) {
  try {
    PendingRaster probe(path, format, 1, 1, bands, type);
    std::vector<unsigned char> pixel(static_cast<size_t>(bands) * typeSize(type), 0);
    QuietGdalErrors quiet;
    CPLErrorReset();
    if (probe.dataset().RasterIO(GF_Write, 0, 0, 1, 1, pixel.data(), 1, 1, type, bands, nullptr, 0,
                                 0, 0, nullptr) != CE_None)
      throw Error(parameter, "GDAL's " + std::string(format.driver->GetDescription()) +
                                 " driver cannot write the pixels of '" + path +
                                 "': " + CPLGetLastErrorMsg() +
                                 " (choose another format, e.g. GeoTIFF or ENVI)");
    std::vector<std::string> files = probe.closeAndListFiles();
    if (files.empty())
      throw Error(parameter, "GDAL's " + std::string(format.driver->GetDescription()) +
                                 " driver writes no file for '" + path +
                                 "' (it keeps rasters in memory): choose a file format such as "
                                 "GTiff or ENVI");
    return files;
  } catch (const Error& error) {
    if (error.parameter() != "OUTPUT") throw;
    throw Error(parameter, error.what());
  }
}

}  // namespace

OutputCheck::OutputCheck(std::vector<InputFile> inputs, Feedback& feedback)
    : inputs_(std::move(inputs)), feedback_(feedback) {
  for (InputFile& input : inputs_) input.path = canonical(input.path);
}

namespace {

// What the destination is now, which an output may replace: its files and its GDAL sidecar.
std::vector<std::string> replaceableAt(const std::string& path) {
  std::vector<std::string> replaceable = existingDatasetFiles(path);
  replaceable.push_back(path + ".aux.xml");
  return replaceable;
}

}  // namespace

void OutputCheck::rasterDestination(const std::string& parameter, const std::string& path) {
  checkFolder(parameter, path);
  const std::vector<std::string> replaceable = replaceableAt(path);
  std::vector<std::string> destination = replaceable;
  destination.push_back(path);  // what the driver may not write, known before it runs
  claim(parameter, path, destination, replaceable);
}

void OutputCheck::raster(const std::string& parameter, const std::string& path,
                         const RasterFormat& format, int bands, GDALDataType type) {
  rasterDestination(parameter, path);  // before the probe writes anything
  removeStalePendingFolders(QFileInfo(QString::fromStdString(path)).absolutePath().toStdString());
  const std::vector<std::string> replaceable = replaceableAt(path);
  std::vector<std::string> files = filesWrittenFor(parameter, path, format, bands, type);
  files.insert(files.end(), replaceable.begin(), replaceable.end());
  claim(parameter, path, files, replaceable);
}

void OutputCheck::file(const std::string& parameter, const std::string& path) {
  checkFolder(parameter, path);
  claim(parameter, path, {path}, {path});
}

void OutputCheck::claim(const std::string& parameter, const std::string& destination,
                        const std::vector<std::string>& files,
                        const std::vector<std::string>& replaceable) {
  std::vector<std::string> mayReplace;
  mayReplace.reserve(replaceable.size());
  for (const std::string& file : replaceable) mayReplace.push_back(canonical(file));
  for (const std::string& file : files) {
    const std::string path = canonical(file);
    const std::string problem = whyNotWritable(parameter, destination, file, path, mayReplace);
    if (!problem.empty()) throw Error(parameter, problem);
    // A raster claims its destination twice (before and after the probe): one entry is enough.
    if (std::none_of(claimed_.begin(), claimed_.end(),
                     [&](const Claim& c) { return c.file == path; }))
      claimed_.push_back({path, parameter});
  }
}

std::string OutputCheck::whyNotWritable(const std::string& parameter,
                                        const std::string& destination, const std::string& file,
                                        const std::string& path,
                                        const std::vector<std::string>& mayReplace) const {
  const auto input = std::find_if(inputs_.begin(), inputs_.end(),
                                  [&](const InputFile& in) { return in.path == path; });
  const auto other = std::find_if(claimed_.begin(), claimed_.end(), [&](const Claim& c) {
    return c.file == path && c.parameter != parameter;
  });
  const bool itself = path == canonical(destination);
  std::string writes = "'" + destination + "' ";
  if (!itself) writes += "also writes '" + file + "', which ";
  if (input != inputs_.end() && input->sidecarOf.empty())
    return writes + "is read by this run (" + input->parameter + "): choose another file name";
  if (input != inputs_.end())
    return writes + "is a file GDAL reads with " + input->parameter + " '" + input->sidecarOf +
           "': choose another file name";
  if (other != claimed_.end())
    return writes + "is written by another output of this run (" + other->parameter +
           "): choose another file name";
  const QFileInfo info(QString::fromStdString(file));
  if ((info.exists() || info.isSymLink()) && !info.isFile())
    return "'" + file +
           "' exists and is not a regular file (a folder, device, pipe or socket): choose another "
           "output name";
  if (info.exists() && !contains(mayReplace, path))
    return writes + "exists and is not part of '" + destination +
           "': choose another output name, or move it away";
  return {};
}

void OutputCheck::removeStalePendingFolders(const std::string& folder) {
  if (contains(cleanedFolders_, folder)) return;
  cleanedFolders_.push_back(folder);
  const QDir dir(QString::fromStdString(folder));
  const std::string host = PendingRaster::hostTag();
  for (const QString& name : dir.entryList(QDir::Dirs | QDir::Hidden | QDir::NoDotAndDotDot)) {
    int64_t pid = 0;
    std::string owner;
    if (!PendingRaster::isPendingFolderName(name.toStdString(), &pid, &owner)) continue;
    if (owner != host || pid == QCoreApplication::applicationPid() || !processIsGone(pid)) continue;
    if (QDir(dir.filePath(name)).removeRecursively())
      feedback_.info(QString("Removed '%1', a partial output that process %2 left when it ended")
                         .arg(dir.filePath(name))
                         .arg(pid));
  }
}

}  // namespace hyperstream
