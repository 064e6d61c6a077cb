#include "io/InputFiles.h"

#include "core/Error.h"

#include <QFileInfo>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hyperstream {

namespace {

bool isVirtual(const std::string& path) {
  return path.rfind("/vsi", 0) == 0;
}

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

}  // namespace

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
