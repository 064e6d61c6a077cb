// Writes the product fixtures (ProductFixtures.h) into a folder, each with the plain GeoTIFF it
// must read as beside it, for the qgis_process test and the product benchmark:
//   write_products FOLDER ROWS COLS [NAMES]   (NAMES: e.g. emit,prisma; default all four)
// prints "NAME PRODUCT PLAIN" per product.

#include "ProductFixtures.h"

#include <gdal_priv.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: write_products FOLDER ROWS COLS [NAMES]\n");
    return 2;
  }
  GDALAllRegister();
  const std::string folder = argv[1];
  const int64_t rows = std::atoll(argv[2]), cols = std::atoll(argv[3]);
  const auto emitLike = [&] {
    return testing::writeEmit(folder + "/EMIT_L2A_RFL_001_20230801T200000_2321313_005.nc", rows,
                              cols, 1);
  };
  const auto prismaLike = [&] {
    return testing::writePrisma(folder + "/PRS_L2D_STD_20200627102358_20200627102402_0001.he5",
                                rows, cols, 2);
  };
  const auto enmapLike = [&] { return testing::writeEnmap(folder, rows, cols, 3); };
  const auto desisLike = [&] { return testing::writeDesis(folder, rows, cols, 4); };
  const std::pair<const char*, std::function<testing::Product()>> writers[] = {
      {"emit", emitLike}, {"prisma", prismaLike}, {"enmap", enmapLike}, {"desis", desisLike}};
  const std::string names = argc == 5 ? argv[4] : "emit,prisma,enmap,desis";
  for (const auto& [name, write] : writers) {
    if (("," + names + ",").find("," + std::string(name) + ",") == std::string::npos) continue;
    const testing::Product product = write();
    const std::string plain = folder + "/" + name + "-plain.tif";
    testing::writeCube(product.expected, plain, GDT_Float32);
    std::printf("%s %s %s\n", name, product.path.c_str(), plain.c_str());
  }
  return 0;
}
