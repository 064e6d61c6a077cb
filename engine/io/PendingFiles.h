#pragma once
// Files that exist only while a job writes them (outputs in progress), kept where a signal
// handler can remove them before the process ends (a second Ctrl-C, mpirun's SIGTERM).
// Removing them in time is best effort: the next run removes what a killed process left behind
// (see OutputCheck).

#include <string>
#include <vector>

namespace hyperstream {

// Registers paths for as long as it lives.
class PendingFiles {
 public:
  PendingFiles() = default;
  ~PendingFiles();  // forgets them: they were committed or removed
  PendingFiles(const PendingFiles&) = delete;
  PendingFiles& operator=(const PendingFiles&) = delete;

  // A file, or a folder (removed after every file, when it is empty by then).
  void add(const std::string& path);

 private:
  std::vector<int> slots_;
};

// While one lives, SIGTERM, SIGINT and SIGHUP remove the registered files, then end the process
// as they would have: for hosts that leave those signals to their default action (qgis_process,
// which a SIGTERM would otherwise end with an output's hidden folder left behind). Handlers a host
// installed itself are left alone; the default is restored when the last one ends.
class RemoveOnTermination {
 public:
  RemoveOnTermination();
  ~RemoveOnTermination();
  RemoveOnTermination(const RemoveOnTermination&) = delete;
  RemoveOnTermination& operator=(const RemoveOnTermination&) = delete;
};

// Removes every registered file, then every registered folder. Async-signal-safe (unlink and
// rmdir only): for signal handlers about to end the process.
void removePendingFilesNow();

}  // namespace hyperstream
