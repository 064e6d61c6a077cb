#include "core/JobOptions.h"

namespace hyperstream {

std::string outputTypeName(OutputType type) {
  // In OutputType's order.
  static const char* const kNames[] = {"Float32", "Float64", "Byte",  "UInt16",
                                       "Int16",   "UInt32",  "Int32", "Input"};
  return kNames[static_cast<int>(type)];
}

}  // namespace hyperstream
