#pragma once
// A file a run reads, as OutputCheck claims it (io/InputFiles.h). Apart, without Qt, for the
// structs that carry it into code the CUDA library compiles too.

#include <string>

namespace hyperstream {

struct InputFile {
  std::string path;
  std::string parameter;  // INPUT, STATS, ENDMEMBERS, LOCATIONS, ...
  std::string sidecarOf;  // empty for the file itself; else the file GDAL reads it with
};

}  // namespace hyperstream
