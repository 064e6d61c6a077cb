#include "io/InputFiles.h"

#include "core/Error.h"

#include <QFileInfo>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

namespace hyperstream {

namespace {

// Empty, or why `path` (which exists) cannot be read as a file.
std::string notRegular(const std::string& path) {
  struct stat status {};
  if (stat(path.c_str(), &status) != 0) return std::strerror(errno);
  if (S_ISDIR(status.st_mode)) return "a folder";
  if (S_ISFIFO(status.st_mode)) return "a pipe (FIFO)";
  if (S_ISSOCK(status.st_mode)) return "a socket";
  if (S_ISCHR(status.st_mode) || S_ISBLK(status.st_mode)) return "a device";
  return {};
}

bool existsOrDangles(const std::string& path) {
  struct stat status {};
  return lstat(path.c_str(), &status) == 0;
}

// The parts of a subdataset name after its driver's prefix, split at each ':'.
std::vector<std::string> afterPrefix(const std::string& name, size_t colon) {
  std::vector<std::string> parts;
  size_t start = colon + 1;
  for (size_t next; (next = name.find(':', start)) != std::string::npos; start = next + 1)
    parts.push_back(name.substr(start, next - start));
  parts.push_back(name.substr(start));
  return parts;
}

// The first run of parts that, joined by ':', names an existing file; empty if none does.
std::string existingFileAmong(const std::vector<std::string>& parts) {
  for (size_t first = 0; first < parts.size(); ++first) {
    std::string candidate;
    for (size_t last = first; last < parts.size(); ++last) {
      candidate += (last > first ? ":" : "") + parts[last];
      if (!candidate.empty() && existsOrDangles(candidate)) return candidate;
    }
  }
  return {};
}

}  // namespace

bool isVirtual(const std::string& path) {
  return path.rfind("/vsi", 0) == 0;
}

bool isNonFileName(const std::string& name) {
  return isVirtual(name) || parseSubdatasetName(name).isSubdataset;
}

SubdatasetName parseSubdatasetName(const std::string& name) {
  // DRIVER:"file":rest, DRIVER:file:rest or DRIVER:N:file (NETCDF, HDF5, HDF4_SDS, GTIFF_DIR,
  // ...): a prefix of capitals, digits and '_' of two characters or more, then the file.
  const size_t colon = name.find(':');
  if (colon == std::string::npos || colon < 2 || existsOrDangles(name)) return {};
  for (size_t i = 0; i < colon; ++i)
    if (!(std::isupper(static_cast<unsigned char>(name[i])) ||
          std::isdigit(static_cast<unsigned char>(name[i])) || name[i] == '_'))
      return {};
  SubdatasetName parsed{true, name.substr(0, colon), {}};
  if (const size_t open = name.find('"', colon); open != std::string::npos) {
    const size_t close = name.find('"', open + 1);
    parsed.file = name.substr(open + 1, close == std::string::npos ? close : close - open - 1);
  } else {
    parsed.file = existingFileAmong(afterPrefix(name, colon));
  }
  return parsed;
}

std::vector<std::string> sidecarsOf(const std::string& path) {
  const QFileInfo info(QString::fromStdString(path));
  const std::string stem = (info.path() + "/" + info.completeBaseName()).toStdString();
  std::vector<std::string> files;
  for (const char* suffix : {".aux.xml", ".aux", ".ovr", ".msk", ".hdr"})
    files.push_back(path + suffix);
  if (stem != path)
    for (const char* suffix :
         {".aux", ".hdr", ".prj", ".wld", ".tfw", ".tifw", ".rpb", "_rpc.txt", ".imd"})
      files.push_back(stem + suffix);
  return files;
}

void checkInputFile(const std::string& path, const std::string& parameter) {
  if (path.empty()) throw Error(parameter, "no file given");
  if (isVirtual(path)) return;
  if (const SubdatasetName subdataset = parseSubdatasetName(path); subdataset.isSubdataset) {
    if (subdataset.file.empty())
      throw Error(parameter, "'" + path + "' does not exist, and as a " + subdataset.driver +
                                 " subdataset name it names no existing file");
    if (isVirtual(subdataset.file)) return;
    if (!existsOrDangles(subdataset.file))
      throw Error(parameter, "the file '" + subdataset.file + "' of '" + path + "' does not exist");
    checkInputFile(subdataset.file, parameter);
    return;
  }
  if (!existsOrDangles(path)) throw Error(parameter, "'" + path + "' does not exist");
  if (const std::string what = notRegular(path); !what.empty())
    throw Error(parameter, "'" + path + "' is not a regular file (" + what + "): give a file");
  for (const std::string& sidecar : sidecarsOf(path)) {
    if (!existsOrDangles(sidecar)) continue;
    const std::string what = notRegular(sidecar);
    if (what.empty()) continue;
    std::string message = "'" + sidecar + "', which GDAL reads with '";
    message += path;
    message += "', is not a regular file (" + what + "): move it away";
    throw Error(parameter, message);
  }
}

QByteArray readInputFile(const std::string& path, const std::string& parameter, int64_t largest) {
  checkInputFile(path, parameter);
  // O_NONBLOCK: had the file become a FIFO since the check, open() would not wait for a writer.
  const int descriptor = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (descriptor < 0) throw Error(parameter, "cannot read '" + path + "': " + std::strerror(errno));
  struct stat status {};
  QByteArray content;
  std::string problem;
  if (fstat(descriptor, &status) != 0 || !S_ISREG(status.st_mode))
    problem = "it is not a regular file";
  else if (status.st_size > largest)
    problem = "it holds " + std::to_string(status.st_size) + " bytes, more than the " +
              std::to_string(largest) + " such a file can have";
  else
    content.resize(static_cast<int>(status.st_size));
  int64_t done = 0;
  while (problem.empty() && done < content.size()) {
    const ssize_t got = read(descriptor, content.data() + done, content.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) problem = got < 0 ? std::strerror(errno) : "it ended early";
    done += got > 0 ? got : 0;
  }
  close(descriptor);
  if (!problem.empty()) throw Error(parameter, "cannot read '" + path + "': " + problem);
  return content;
}

std::vector<InputFile> rasterInputFiles(const std::string& parameter,
                                        const std::vector<std::string>& files) {
  std::vector<InputFile> claimed;
  claimed.reserve(files.size() * 15);  // each file and its sidecars
  for (const std::string& file : files) claimed.push_back({file, parameter, {}});
  for (const std::string& file : files)
    for (std::string& sidecar : sidecarsOf(file))
      claimed.push_back({std::move(sidecar), parameter, file});
  return claimed;
}

InputFile plainInputFile(const std::string& parameter, const std::string& path) {
  return {path, parameter, {}};
}

}  // namespace hyperstream
