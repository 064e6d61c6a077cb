// Linked first into a second build of the provider library, for test_qgis_desktop: its code and
// its exported name move everything else in the library, as a newer build would. Reinstalling
// the plugin over a loaded copy must then cope with a library that really differs.
extern "C" const char* hyperstream_variant_build() {
  return "a second build of libhyperstream_qgis.so, for tests";
}
