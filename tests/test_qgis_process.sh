#!/usr/bin/env bash
# Installs the plugin folder into a throwaway QGIS profile and drives it as users do:
# qgis_process.bin (plugins enable, list, help, run, --json run) and PyQGIS processing.run.
# Results must equal the hyperstream command line's for the same options.
#   test_qgis_process.sh PLUGIN_DIR HYPERSTREAM_CLI MODEL3 UNMIXING_MODEL3 WRITE_PRODUCTS \
#     DETECT_MODEL3
set -euo pipefail
plugin=$1 cli=$2 model=$3 unmixing_model=$4 write_products=$5 detect_model=$6
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR=$work/xdg QGIS_CUSTOM_CONFIG_PATH=$work/config
mkdir -m 700 "$work/xdg"
plugins=$QGIS_CUSTOM_CONFIG_PATH/profiles/default/python/plugins
mkdir -p "$plugins" && cp -r "$plugin" "$plugins/"
# /usr/bin/qgis_process is Debian's wrapper; it adds --noversioncheck, which 3.22 rejects.
qp=/usr/bin/qgis_process.bin
fail() { echo "FAIL: $*"; exit 1; }

"$cli" synth "$work/scene.tif" --rows 60 --cols 80 --bands 40 --quiet
$qp plugins enable hyperstream >/dev/null 2>&1
# (grep reads saved lists: grep -q ending a pipe early would fail it under pipefail at random)
listing=$($qp list 2>/dev/null)
grep -q $'hyperstream:pca\tPrincipal component analysis' <<<"$listing" || fail "list"
$qp help hyperstream:pca 2>/dev/null | grep -q "OUTPUT_STATS" || fail "help"

$qp run hyperstream:pca -- INPUT="$work/scene.tif" OUTPUT="$work/qgis.tif" COMPONENTS=4 \
  >"$work/run.log" 2>&1 || { cat "$work/run.log"; fail "run"; }
$qp --json run hyperstream:pca -- INPUT="$work/scene.tif" OUTPUT="$work/json.tif" COMPONENTS=4 \
  OUTPUT_STATS="$work/stats.json" OUTPUT_TABLE="$work/table.csv" 2>/dev/null >"$work/run.json"
/usr/bin/python3 - "$work/run.json" <<'PY' || fail "--json results"
import json, sys
results = json.load(open(sys.argv[1]))["results"]
for key in ("OUTPUT", "OUTPUT_STATS", "OUTPUT_TABLE", "N_COMPONENTS", "VARIANCE_EXPLAINED",
            "VALID_PIXELS", "DEVICE_USED"):
    assert key in results, key
assert results["N_COMPONENTS"] == 4 and results["VALID_PIXELS"] > 0
PY
# A subdataset as INPUT, as a layer of a netCDF file loads in QGIS: the same components as the
# plain file's (the cube written as reflectance(band, y, x), its nodata as _FillValue, beside a
# second array).
/usr/bin/python3 - "$work" <<'PY' || fail "writing the netCDF fixture"
import sys
from osgeo import gdal
import numpy as np
gdal.UseExceptions()
work = sys.argv[1]
scene = gdal.Open(f"{work}/scene.tif")
cube = scene.ReadAsArray()
root = gdal.GetDriverByName("netCDF").CreateMultiDimensional(f"{work}/scene.nc").GetRootGroup()
dims = [root.CreateDimension(n, None, None, s) for n, s in zip(("band", "y", "x"), cube.shape)]
for dim, start, step in zip(dims, (1.0, 5000.0, 1000.0), (1.0, -2.0, 2.0)):
    coordinate = root.CreateMDArray(dim.GetName(), [dim], gdal.ExtendedDataType.Create(gdal.GDT_Float64))
    if dim.GetName() != "band":
        for key, value in (("axis", dim.GetName().upper()), ("units", "m"),
                           ("standard_name", f"projection_{dim.GetName()}_coordinate")):
            coordinate.CreateAttribute(key, [], gdal.ExtendedDataType.CreateString()).Write(value)
    coordinate.Write(start + step * np.arange(dim.GetSize()))
array = root.CreateMDArray("reflectance", dims, gdal.ExtendedDataType.Create(gdal.GDT_Int16))
array.SetNoDataValueDouble(scene.GetRasterBand(1).GetNoDataValue())
array.Write(cube)
root.CreateMDArray("mask", dims[1:], gdal.ExtendedDataType.Create(gdal.GDT_Byte)).Write(
    np.ones(cube.shape[1:], dtype=np.uint8))
PY
$qp run hyperstream:pca -- INPUT="NETCDF:\"$work/scene.nc\":reflectance" OUTPUT="$work/nc.tif" \
  COMPONENTS=4 >"$work/nc.log" 2>&1 || { cat "$work/nc.log"; fail "a netCDF subdataset as INPUT"; }
/usr/bin/python3 - "$work" <<'PY' || fail "the subdataset's components differ from the file's"
import sys
from osgeo import gdal
work = sys.argv[1]
a, b = (gdal.Open(f"{work}/{n}.tif").ReadAsArray() for n in ("nc", "qgis"))
assert a.shape == b.shape and (a == b).all()
PY
# NODATA declares the fill of a file that declares none: the components of the file that does.
gdal_translate -q -a_nodata none "$work/scene.tif" "$work/undeclared.tif"
$qp run hyperstream:pca -- INPUT="$work/undeclared.tif" NODATA=-9999 OUTPUT="$work/nodata.tif" \
  COMPONENTS=4 >"$work/nodata.log" 2>&1 || { cat "$work/nodata.log"; fail "NODATA"; }
/usr/bin/python3 - "$work" <<'PY' || fail "NODATA=-9999 differs from the file's own nodata"
import sys
from osgeo import gdal
work = sys.argv[1]
a, b = (gdal.Open(f"{work}/{n}.tif").ReadAsArray() for n in ("nodata", "qgis"))
assert a.shape == b.shape and (a == b).all()
PY
$qp run hyperstream:pca -- INPUT="$work/undeclared.tif" NODATA=0.5 OUTPUT="$work/bad.tif" \
  >"$work/nodata.log" 2>&1 && fail "NODATA=0.5 on Int16 accepted"
grep -q "NODATA" "$work/nodata.log" || { cat "$work/nodata.log"; fail "NODATA's error"; }
# OUTPUT_TYPE and a RAM budget of 2^32 MiB reach the engine (both were lost inside QGIS once).
type_of() { gdalinfo "$1" | grep -m1 -o 'Type=[A-Za-z0-9]*'; }
$qp run hyperstream:pca -- INPUT="$work/scene.tif" OUTPUT="$work/pca64.tif" COMPONENTS=3 \
  OUTPUT_TYPE=1 RAM_MB=4294967296 OUTPUT_STATS="$work/pca64.json" >"$work/pca64.log" 2>&1 ||
  { cat "$work/pca64.log"; fail "pca with RAM_MB=2^32"; }
[ "$(type_of "$work/pca64.tif")" = Type=Float64 ] || fail "pca OUTPUT_TYPE=1 wrote $(type_of "$work/pca64.tif")"
$qp run hyperstream:pca -- INPUT="$work/scene.tif" OUTPUT="$work/pcab.tif" COMPONENTS=3 \
  OUTPUT_TYPE=2 OUTPUT_STATS="$work/pcab.json" >/dev/null 2>&1 || fail "pca Byte"
for t in 1:Float64 2:Byte; do
  $qp run hyperstream:applytransform -- INPUT="$work/scene.tif" STATS="$work/pcab.json" \
    OUTPUT_TYPE="${t%%:*}" OUTPUT="$work/applied${t%%:*}.tif" >/dev/null 2>&1 || fail "apply $t"
  [ "$(type_of "$work/applied${t%%:*}.tif")" = "Type=${t#*:}" ] || fail "applytransform OUTPUT_TYPE=$t"
done
# A bad parameter fails with its name in the message.
if $qp run hyperstream:pca -- INPUT="$work/scene.tif" OUTPUT="$work/bad.tif" COMPONENTS=500 \
     >"$work/bad.log" 2>&1; then fail "COMPONENTS=500 accepted"; fi
grep -q "COMPONENTS" "$work/bad.log" || fail "error does not name COMPONENTS"
[ ! -e "$work/bad.tif" ] || fail "bad run left an output"

# Spatial preprocessing: listed, helped, run with its optional alpha output.
grep -q $'hyperstream:spp\tSpatial preprocessing (SPP)' <<<"$listing" || fail "list spp"
$qp help hyperstream:spp 2>/dev/null | grep -q "OUTPUT_ALPHA" || fail "help spp"
$qp run hyperstream:spp -- INPUT="$work/scene.tif" OUTPUT="$work/spp.tif" WINDOW=3 \
  OUTPUT_ALPHA="$work/alpha.tif" >"$work/spp.log" 2>&1 || { cat "$work/spp.log"; fail "run spp"; }
[ -s "$work/spp.tif" ] && [ -s "$work/alpha.tif" ] || fail "spp outputs missing"

# The README's standalone PyQGIS script.
/usr/bin/python3 "$(dirname "$0")/../docs/examples/standalone_pca.py" "$work/scene.tif" \
  "$work/pyqgis.tif" "$plugins" >"$work/pyqgis.log" 2>&1 || { cat "$work/pyqgis.log"; fail "PyQGIS"; }
grep -q "^10 components, .* on cpu" "$work/pyqgis.log" || { cat "$work/pyqgis.log"; fail "PyQGIS"; }

# Out of memory ends the run with an error naming RAM_MB (it once hung in a dialog): here an
# address-space limit that leaves no room for the budget.
if command -v prlimit >/dev/null; then
  status=0
  timeout -s KILL 120 prlimit --as=2200000000 $qp run hyperstream:pca -- INPUT="$work/scene.tif" \
    OUTPUT="$work/oom.tif" RAM_MB=100000 >"$work/oom.log" 2>&1 || status=$?
  [ $status -ne 0 ] && [ $status -ne 137 ] || { cat "$work/oom.log"; fail "RAM_MB=100000 under ulimit -v: status $status"; }
  grep -q "RAM_MB" "$work/oom.log" || { cat "$work/oom.log"; fail "out of memory does not name RAM_MB"; }
fi

# A provider library that cannot be loaded says why (it said only "error starting plugin").
broken=$work/broken/profiles/default/python/plugins
mkdir -p "$broken" && cp -r "$plugin" "$broken/"
echo "not a library" >"$broken/hyperstream/libhyperstream_qgis.so"
# QGIS 3.22 reports it at `list`; 3.40 refuses to enable a plugin that fails to load, and says why.
QGIS_CUSTOM_CONFIG_PATH=$work/broken $qp plugins enable hyperstream >"$work/broken.log" 2>&1 || true
QGIS_CUSTOM_CONFIG_PATH=$work/broken $qp list >>"$work/broken.log" 2>&1 || true
grep -q "provider library cannot be loaded: .*too short" "$work/broken.log" ||
  { cat "$work/broken.log"; fail "a broken library's load failure does not say why"; }
/usr/bin/python3 - "$plugins" <<'PY' || fail "the load failure's advice"
import json, sys
sys.path.insert(0, sys.argv[1])
from hyperstream import _why
# The packages this build's libraries came from, recorded when it was linked.
build = json.load(open(sys.argv[1] + "/hyperstream/build.json"))
gdal = build["packages"]["libgdal"]
message = _why(OSError("libgdal.so.99: cannot open shared object file: No such file or directory"))
assert "libgdal.so.99 is missing" in message and "sudo apt install " + gdal in message, message
assert "QGIS " + build["qgis"] in message, message
PY

# MNF: listed, helped, run; the same numbers as the command line's.
grep -q $'hyperstream:mnf\tMinimum noise fraction (MNF)' <<<"$listing" || fail "list mnf"
$qp help hyperstream:mnf 2>/dev/null | grep -q "NOISE_DIRECTION" || fail "help mnf"
$qp run hyperstream:mnf -- INPUT="$work/scene.tif" OUTPUT="$work/mnf_qgis.tif" COMPONENTS=4 \
  NOISE_DIRECTION=3 >"$work/mnf.log" 2>&1 || { cat "$work/mnf.log"; fail "run mnf"; }
"$cli" mnf "$work/scene.tif" "$work/mnf_cli.tif" --components 4 --noise lower --quiet
/usr/bin/python3 - "$work" <<'PY' || fail "the QGIS MNF differs from the command line's"
import sys
import numpy as np
from osgeo import gdal
work = sys.argv[1]
a = gdal.Open(f"{work}/mnf_qgis.tif").ReadAsArray().astype(float)
b = gdal.Open(f"{work}/mnf_cli.tif").ReadAsArray().astype(float)
assert a.shape == b.shape == (4, 60, 80), a.shape
for band in range(4):
    worst = np.max(np.abs(a[band] - b[band])) / np.std(b[band])
    assert worst <= 1e-4, f"band {band + 1}: max difference {worst:.2e} std"
PY

# Apply: the MNF's saved transform applied again through qgis_process.
"$cli" mnf "$work/scene.tif" "$work/mnf_fit.tif" --components 3 --stats "$work/mnf_fit.json" --quiet
$qp help hyperstream:applytransform 2>/dev/null | grep -q "STATS" || fail "help applytransform"
$qp run hyperstream:applytransform -- INPUT="$work/scene.tif" STATS="$work/mnf_fit.json" \
  OUTPUT="$work/applied.tif" >"$work/apply.log" 2>&1 || { cat "$work/apply.log"; fail "run apply"; }
[ "$(gdalinfo "$work/applied.tif" | grep -c '^Band ')" = 3 ] || fail "apply wrote the wrong bands"

# Denoise and the inverse transform through qgis_process: the command line's numbers.
$qp help hyperstream:denoise 2>/dev/null | grep -q "TRANSFORM" || fail "help denoise"
$qp run hyperstream:denoise -- INPUT="$work/scene.tif" TRANSFORM=1 COMPONENTS=3 OUTPUT_TYPE=2 \
  OUTPUT="$work/denoised_qgis.tif" >"$work/denoise.log" 2>&1 || { cat "$work/denoise.log"; fail "run denoise"; }
"$cli" denoise "$work/scene.tif" "$work/denoised_cli.tif" --transform mnf --components 3 \
  --type float64 --quiet
$qp help hyperstream:inversetransform 2>/dev/null | grep -q "STATS" || fail "help inversetransform"
$qp run hyperstream:inversetransform -- INPUT="$work/mnf_fit.tif" STATS="$work/mnf_fit.json" \
  OUTPUT_TYPE=2 OUTPUT="$work/inverse_qgis.tif" >"$work/inverse.log" 2>&1 ||
  { cat "$work/inverse.log"; fail "run inversetransform"; }
/usr/bin/python3 - "$work" <<'PY' || fail "QGIS's denoise or inverse differs from the command line's"
import sys
import numpy as np
from osgeo import gdal
work = sys.argv[1]
scene = gdal.Open(f"{work}/scene.tif").ReadAsArray().astype(float)
a = gdal.Open(f"{work}/denoised_qgis.tif").ReadAsArray()
b = gdal.Open(f"{work}/denoised_cli.tif").ReadAsArray()
assert a.shape == b.shape == scene.shape, a.shape
assert np.max(np.abs(a - b)) <= 1e-9 * np.max(np.abs(b)), "denoise"
# From the same three MNF components (written as Float32): the same rebuild, to float32 rounding.
c = gdal.Open(f"{work}/inverse_qgis.tif").ReadAsArray()
assert c.shape == scene.shape, c.shape
assert np.max(np.abs(c - b)) <= 1e-5 * np.max(np.abs(b)), np.max(np.abs(c - b))
PY

# A graphical model chaining hyperstream:pca with native:rasterlayerstatistics.
$qp --json run "$model" -- scene="$work/scene.tif" components=4 pca:components_raster="$work/model.tif" \
  stats:pc1_statistics="$work/model.html" 2>/dev/null >"$work/model.json" || fail "model run"
[ -s "$work/model.html" ] || fail "the model's statistics report is missing"

"$cli" pca "$work/scene.tif" "$work/cli.tif" --components 4 --quiet
# Same numbers as the command line, within 1e-4 of each component's standard deviation (the GPU
# issue's tolerance). Not bitwise: inside QGIS the BLAS calls may resolve to the
# BLAS that QGIS itself loaded (libblas.so.3), whose rounding can differ in the last bits.
/usr/bin/python3 - "$work" <<'PY' || fail "a QGIS result differs from the command line's"
import sys
import numpy as np
from osgeo import gdal
work = sys.argv[1]
cli = gdal.Open(f"{work}/cli.tif")  # keep the dataset alive while its band is used
reference = cli.ReadAsArray().astype(float)
nodata = cli.GetRasterBand(1).GetNoDataValue()
for name in ("qgis", "json", "pyqgis", "model"):
    # (the PyQGIS example writes 10 components: its first are the same)
    values = gdal.Open(f"{work}/{name}.tif").ReadAsArray().astype(float)[:len(reference)]
    assert values.shape == reference.shape, name
    for band, (a, b) in enumerate(zip(values, reference)):
        assert ((a == nodata) == (b == nodata)).all(), f"{name} band {band + 1}: nodata differs"
        valid = b != nodata
        worst = np.max(np.abs(a[valid] - b[valid])) / np.std(b[valid])
        assert worst <= 1e-4, f"{name} band {band + 1}: max difference {worst:.2e} std"
PY
# The unmixing chain: endmembers and abundances as the command line's, then the shipped model
# (SPP -> endmembers searched in its output -> FCLS abundances).
"$cli" synth "$work/patches.tif" --rows 60 --cols 60 --bands 30 --endmembers 4 --pure-patches 4 \
  --quiet
$qp help hyperstream:endmembers 2>/dev/null | grep -q "LOCATIONS" || fail "help endmembers"
$qp run hyperstream:endmembers -- INPUT="$work/patches.tif" COUNT=4 METHOD=2 \
  OUTPUT="$work/em_qgis.csv" OUTPUT_POINTS="$work/em.gpkg" >"$work/em.log" 2>&1 ||
  { cat "$work/em.log"; fail "run endmembers"; }
"$cli" endmembers "$work/patches.tif" "$work/em_cli.csv" --count 4 --method atgp --quiet
cmp -s "$work/em_qgis.csv" "$work/em_cli.csv" || fail "QGIS's endmembers differ from the command line's"
[ "$(ogrinfo -ro -so "$work/em.gpkg" endmembers | grep -c 'Feature Count: 4')" = 1 ] ||
  fail "the endmember points layer"
$qp help hyperstream:abundances 2>/dev/null | grep -q "ENDMEMBERS" || fail "help abundances"
$qp run hyperstream:abundances -- INPUT="$work/patches.tif" ENDMEMBERS="$work/em_cli.csv" \
  OUTPUT_TYPE=1 OUTPUT="$work/ab_qgis.tif" >"$work/ab.log" 2>&1 || { cat "$work/ab.log"; fail "run abundances"; }
"$cli" abundances "$work/patches.tif" "$work/em_cli.csv" "$work/ab_cli.tif" --type float64 --quiet
$qp run "$unmixing_model" -- image="$work/patches.tif" number_of_endmembers=4 \
  endmembers:table="$work/chain.csv" endmembers:points="$work/chain.gpkg" \
  abundances:abundances="$work/chain.tif" abundances:rmse="$work/chain_rmse.tif" \
  >"$work/chain.log" 2>&1 || { cat "$work/chain.log"; fail "the unmixing model"; }
/usr/bin/python3 - "$work" <<'PY' || fail "the unmixing results"
import sys
import numpy as np
from osgeo import gdal
work = sys.argv[1]
a = gdal.Open(f"{work}/ab_qgis.tif").ReadAsArray()
b = gdal.Open(f"{work}/ab_cli.tif").ReadAsArray()
valid = np.isfinite(b[0])
assert a.shape == b.shape == (4, 60, 60) and valid.sum() > 3000, a.shape
assert np.nanmax(np.abs(a - b)) <= 1e-9, "QGIS's abundances differ from the command line's"
chain = gdal.Open(f"{work}/chain.tif").ReadAsArray()
assert chain.shape == (4, 60, 60)
assert np.allclose(np.nansum(chain, 0)[valid], 1, atol=1e-5), "FCLS abundances do not sum to one"
PY
# Detection: RX and ACE of the endmembers above as the command line's (to LAPACK's last bits,
# which QGIS's own BLAS may change), then the shipped model (ATGP endmembers -> ACE scores).
$qp help hyperstream:detect 2>/dev/null | grep -q "TARGETS" || fail "help detect"
$qp run hyperstream:rx -- INPUT="$work/patches.tif" OUTPUT_TYPE=1 OUTPUT="$work/rx_qgis.tif" \
  OUTPUT_HTML_FILE="$work/rx.html" >"$work/rx.log" 2>&1 || { cat "$work/rx.log"; fail "run rx"; }
grep -q "Anomaly detection (RX)" "$work/rx.html" || fail "the rx report"
"$cli" rx "$work/patches.tif" "$work/rx_cli.tif" --type float64 --quiet
$qp run hyperstream:detect -- INPUT="$work/patches.tif" TARGETS="$work/em_cli.csv" METHOD=1 \
  OUTPUT_TYPE=1 OUTPUT="$work/ace_qgis.tif" >"$work/ace.log" 2>&1 ||
  { cat "$work/ace.log"; fail "run detect"; }
"$cli" detect "$work/patches.tif" "$work/em_cli.csv" "$work/ace_cli.tif" --method ace \
  --type float64 --quiet
$qp run "$detect_model" -- image="$work/patches.tif" number_of_targets=4 \
  endmembers:targets="$work/model_targets.csv" detect:scores="$work/model_ace.tif" \
  sam:classes="$work/model_classes.tif" \
  >"$work/detect_model.log" 2>&1 || { cat "$work/detect_model.log"; fail "the detection model"; }
$qp run hyperstream:rx -- INPUT="$work/patches.tif" PER_COLUMN=true OUTPUT_TYPE=1 \
  OUTPUT="$work/rxc_qgis.tif" >"$work/rxc.log" 2>&1 || { cat "$work/rxc.log"; fail "run rx per column"; }
"$cli" rx "$work/patches.tif" "$work/rxc_cli.tif" --per-column --type float64 --quiet
$qp run hyperstream:rx -- INPUT="$work/patches.tif" WINDOW=9 GUARD=3 COMPONENTS=4 OUTPUT_TYPE=1 \
  OUTPUT="$work/rxl_qgis.tif" >"$work/rxl.log" 2>&1 || { cat "$work/rxl.log"; fail "run local rx"; }
"$cli" rx "$work/patches.tif" "$work/rxl_cli.tif" --window 9 --guard 3 --components 4 \
  --type float64 --quiet
/usr/bin/python3 - "$work" <<'PY' || fail "the detection results"
import sys
import numpy as np
from osgeo import gdal
work = sys.argv[1]
for name in ("rx", "ace", "rxc", "rxl"):
    a = gdal.Open(f"{work}/{name}_qgis.tif").ReadAsArray()
    b = gdal.Open(f"{work}/{name}_cli.tif").ReadAsArray()
    assert a.shape == b.shape, name
    assert np.nanmax(np.abs(a - b)) <= 1e-9 * np.nanmax(np.abs(b)), name
model = gdal.Open(f"{work}/model_ace.tif")
assert model.RasterCount == 4 and model.GetRasterBand(1).GetDescription().startswith("ACE: ")
ace = model.ReadAsArray()
ace = ace[ace != model.GetRasterBand(1).GetNoDataValue()]
assert ace.size > 3000 and ace.min() >= 0 and ace.max() <= 1 + 1e-9, (ace.min(), ace.max())
classes = gdal.Open(f"{work}/model_classes.tif").ReadAsArray()
assert classes.max() == 4 and (classes > 0).sum() > 1000, np.unique(classes)
PY
# The spectral angle mapper against the endmembers' table: the command line's classes and angles.
$qp help hyperstream:sam 2>/dev/null | grep -q "LIBRARY" || fail "help sam"
$qp run hyperstream:sam -- INPUT="$work/patches.tif" LIBRARY="$work/em_cli.csv" MAX_ANGLE=0.2 \
  OUTPUT_TYPE=1 OUTPUT="$work/sam_qgis.tif" OUTPUT_ANGLE="$work/sam_angle_qgis.tif" \
  OUTPUT_COUNTS="$work/sam_counts.csv" >"$work/sam.log" 2>&1 || { cat "$work/sam.log"; fail "run sam"; }
"$cli" sam "$work/patches.tif" "$work/em_cli.csv" "$work/sam_cli.tif" --max-angle 0.2 \
  --angle "$work/sam_angle_cli.tif" --type float64 --quiet
/usr/bin/python3 - "$work" <<'PY' || fail "the SAM results"
import sys
import numpy as np
from osgeo import gdal
work = sys.argv[1]
a = gdal.Open(f"{work}/sam_qgis.tif").ReadAsArray()
b = gdal.Open(f"{work}/sam_cli.tif").ReadAsArray()
assert a.shape == b.shape == (60, 60) and (a == b).all() and len(np.unique(b)) >= 4, np.unique(b)
a = gdal.Open(f"{work}/sam_angle_qgis.tif").ReadAsArray()
b = gdal.Open(f"{work}/sam_angle_cli.tif").ReadAsArray()
assert np.array_equal(a, b, equal_nan=True)
counts = open(f"{work}/sam_counts.csv").read().splitlines()
assert counts[0] == "class,name,pixels,percent" and len(counts) == 6, counts
PY
# Sensors' products as downloaded (EMIT, PRISMA, EnMAP, DESIS; tests/ProductFixtures.h): each
# product file as INPUT gives the components of the plain GeoTIFF of its expected cube, and
# EMIT's ORTHORECTIFY the command line's --orthorectify output.
mkdir "$work/products"
"$write_products" "$work/products" 40 50 >"$work/products.list"
while read -r name product plain; do
  $qp run hyperstream:pca -- INPUT="$product" OUTPUT="$work/products/$name-qgis.tif" \
    COMPONENTS=4 >"$work/$name.log" 2>&1 || { cat "$work/$name.log"; fail "$name as INPUT"; }
  "$cli" pca "$plain" "$work/products/$name-cli.tif" --components 4 --quiet
  /usr/bin/python3 - "$work/products/$name-qgis.tif" "$work/products/$name-cli.tif" <<'PY' ||
import sys
from osgeo import gdal
a, b = (gdal.Open(n).ReadAsArray() for n in sys.argv[1:])
assert a.shape == b.shape and (a == b).all()
PY
    fail "$name: the components differ from those of its plain GeoTIFF"
done <"$work/products.list"
emit=$(awk '$1 == "emit" {print $2}' "$work/products.list")
prisma=$(awk '$1 == "prisma" {print $2}' "$work/products.list")
# Their subdataset names, as a layer of the container loads in QGIS: the command line's result.
for name in "NETCDF:\"$emit\":reflectance" \
    "HDF5:\"$prisma\"://HDFEOS/SWATHS/PRS_L2D_HCO/Data_Fields/VNIR_Cube"; do
  $qp run hyperstream:pca -- INPUT="$name" OUTPUT="$work/products/sub-qgis.tif" COMPONENTS=4 \
    >"$work/sub.log" 2>&1 || { cat "$work/sub.log"; fail "$name as INPUT"; }
  "$cli" pca "$name" "$work/products/sub-cli.tif" --components 4 --quiet
  /usr/bin/python3 - "$work/products/sub-qgis.tif" "$work/products/sub-cli.tif" <<'PY' ||
import sys
from osgeo import gdal
a, b = (gdal.Open(n).ReadAsArray() for n in sys.argv[1:])
assert a.shape == b.shape and (a == b).all()
PY
    fail "$name: QGIS's components differ from the command line's"
done
$qp run hyperstream:pca -- INPUT="$emit" OUTPUT="$work/products/ortho-qgis.tif" COMPONENTS=4 \
  ORTHORECTIFY=true >"$work/ortho.log" 2>&1 || { cat "$work/ortho.log"; fail "ORTHORECTIFY"; }
"$cli" pca "$emit" "$work/products/ortho-cli.tif" --components 4 --orthorectify --quiet
/usr/bin/python3 - "$work/products" <<'PY' || fail "ORTHORECTIFY differs from --orthorectify"
import sys
from osgeo import gdal
folder = sys.argv[1]
a, b = (gdal.Open(f"{folder}/ortho-{n}.tif") for n in ("qgis", "cli"))
assert (a.ReadAsArray() == b.ReadAsArray()).all()
assert a.GetGeoTransform() == b.GetGeoTransform() and a.GetGeoTransform()[1] == 0.0005
assert a.RasterXSize > 50 and a.GetSpatialRef().GetAuthorityCode(None) == "4326"
PY

# SIGTERM to qgis_process in the middle of a run: the output's hidden folder goes with it.
"$cli" synth "$work/big.tif" --rows 1500 --cols 1000 --bands 60 --quiet
mkdir "$work/term"
$qp run hyperstream:denoise -- INPUT="$work/big.tif" COMPONENTS=5 OUTPUT_TYPE=2 \
  OUTPUT="$work/term/denoised.tif" >"$work/term.log" 2>&1 &
runner=$!
# Waits while qgis_process lives (a loaded shared machine once took over 30 s to get there).
for _ in $(seq 6000); do
  [ -n "$(ls -A "$work/term")" ] || ! kill -0 $runner 2>/dev/null && break
  sleep 0.05
done
if [ -z "$(ls -A "$work/term")" ] || ! kill -0 $runner 2>/dev/null; then
  status=0 && wait $runner || status=$?
  cat "$work/term.log"
  fail "denoise made no hidden folder or ended before SIGTERM (exit status $status)"
fi
kill -TERM $runner
wait $runner && fail "qgis_process ended normally after SIGTERM" || true
[ -z "$(ls -A "$work/term")" ] || fail "SIGTERM left $(ls -A "$work/term")"
echo "1 passed, 0 failed"
