"""`aeromap-engine`: options | run PROJECT_DIR --options FILE | tiles RASTER OUTPUT | tile-worker | formulas |
export SOURCE OUTPUT --format F | volume DEM OUTPUT --area GEOJSON | contours DEM OUTPUT |
difference EARLIER LATER OUTPUT | sightings POINTS OUTPUT | external FOLDER [RESULTS] | version."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path
from typing import Any

from . import __version__
from .errors import EngineError, OptionsError
from .log import log, setup_logging


def _read_option_pairs(path: str | None) -> list[dict[str, Any]]:
    if path is None:
        return []
    try:
        pairs = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise OptionsError(f"Cannot read options file {path}: {exc}") from None
    if not isinstance(pairs, list):
        raise OptionsError("The options file must hold a JSON array of {name, value} objects")
    return pairs


def _cmd_options(_: argparse.Namespace) -> int:
    from .pipeline import all_options

    json.dump([spec.to_nodeodm() for spec in all_options()], sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


def _cmd_version(_: argparse.Namespace) -> int:
    print(__version__)
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from . import pipeline
    from .project import Project

    pipeline.run(Project(Path(args.project_dir).resolve()), _read_option_pairs(args.options))
    log.info("Aeromap engine finished successfully")
    return 0


def _cmd_tiles(args: argparse.Namespace) -> int:
    from .resources import cpu_limit
    from .tiles.pyramid import build_pyramid

    info = build_pyramid(Path(args.raster), Path(args.output), args.elevation, args.name or Path(args.raster).stem,
                         cpu_limit())
    json.dump({"min_zoom": info.min_zoom, "max_zoom": info.max_zoom, "bounds": info.bounds, "tiles": info.tiles,
               "value_range": info.value_range}, sys.stdout)
    sys.stdout.write("\n")
    return 0


def _cmd_tile_worker(_: argparse.Namespace) -> int:
    from .tiles.worker import serve

    serve(sys.stdin, sys.stdout)
    return 0


def _cmd_crs(args: argparse.Namespace) -> int:
    from .geo import raster_crs

    epsg, wkt = raster_crs(Path(args.raster))
    json.dump({"epsg": epsg, "wkt": wkt}, sys.stdout)
    sys.stdout.write("\n")
    return 0


def _cmd_external(args: argparse.Namespace) -> int:
    from .errors import InputError
    from .external.assemble import assemble, problems

    found = problems(Path(args.folder))
    json.dump({"problems": found}, sys.stdout)
    sys.stdout.write("\n")
    if args.results is None:
        return 0
    if found:
        raise InputError("; ".join(found))
    assemble(Path(args.folder), Path(args.results))
    return 0


def _cmd_formulas(_: argparse.Namespace) -> int:
    from .tiles.formulas import describe

    json.dump(describe(), sys.stdout)
    sys.stdout.write("\n")
    return 0


def _rescale(text: str) -> tuple[float, float]:
    try:
        low, high = (float(v) for v in text.replace("%2C", ",").split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"Invalid rescale value: {text} (give low,high)") from None
    return low, high


def _cmd_export(args: argparse.Namespace) -> int:
    from .export.pointcloud import export_pointcloud
    from .export.raster import RasterExport, export_raster
    from .export.target import target_crs
    from .tiles.render import TileStyle

    source, output = Path(args.source), Path(args.output)
    crs = target_crs(args.epsg, args.proj)
    if args.kind == "pointcloud":
        export_pointcloud(source, output, args.format, crs)
    else:
        style = TileStyle(args.rescale, args.color_map, args.hillshade, args.formula, args.bands)
        export_raster(source, output, RasterExport(args.format, args.kind == "elevation", crs, style))
    log.info("Exported %s as %s", source.name, output.name)
    return 0


def _add_export(sub: argparse._SubParsersAction) -> None:
    from .export.pointcloud import POINT_FORMATS
    from .export.raster import RASTER_FORMATS

    export = sub.add_parser("export", help="write a product in another format or CRS, as WebODM's export does")
    export.add_argument("source", help="the orthophoto, DSM or DTM GeoTIFF, or the LAS/LAZ point cloud")
    export.add_argument("output", help="the file to write")
    export.add_argument("--kind", choices=("orthophoto", "elevation", "pointcloud"), required=True)
    export.add_argument("--format", choices=RASTER_FORMATS + POINT_FORMATS, required=True)
    crs = export.add_mutually_exclusive_group()
    crs.add_argument("--epsg", type=int, help="the EPSG code of the CRS to write (default: the product's own)")
    crs.add_argument("--proj", help="the PROJ string of the CRS to write")
    export.add_argument("--formula", help="orthophotos: a vegetation index (see `formulas`), with --bands")
    export.add_argument("--bands", help="orthophotos: the band order the formula reads, or auto")
    export.add_argument("--color-map", help="the colour map of an elevation model or an index")
    export.add_argument("--hillshade", type=float, help="elevation models: the hillshade's exaggeration (0: none)")
    export.add_argument("--rescale", type=_rescale, help="low,high: the values the colours span")
    export.set_defaults(func=_cmd_export)


def _cmd_volume(args: argparse.Namespace) -> int:
    from .atomic_files import write_json
    from .earthworks.measure import volume_of

    try:
        area = json.loads(args.area)
    except json.JSONDecodeError as exc:
        raise OptionsError(f"The area is not GeoJSON: {exc}") from None
    figures = volume_of(Path(args.dem), area, args.base_method, args.base, args.crs)
    write_json(Path(args.output), figures)
    log.info("Volume over %.1f m2: cut %.3f m3, fill %.3f m3, net %.3f m3", figures["area"], figures["cut"],
             figures["fill"], figures["net"])
    return 0


def _cmd_contours(args: argparse.Namespace) -> int:
    from .earthworks.contours import write_contours

    count = write_contours(Path(args.dem), Path(args.output), args.interval, args.simplify, args.format, args.crs)
    log.info("%d contour lines at %g m", count, args.interval)
    return 0


def _cmd_difference(args: argparse.Namespace) -> int:
    from .atomic_files import write_json
    from .earthworks.difference import figures, measure_difference, write_difference

    output = Path(args.output)
    difference, profile, change = measure_difference(Path(args.earlier), Path(args.later), args.noise)
    if output.suffix.lower() == ".json":
        write_json(output, figures(change))
    else:
        write_difference(output, difference, profile, change)
    log.info("Height change over %.1f m2: cut %.3f m3, fill %.3f m3", change.area, change.cut, change.fill)
    return 0


def _cmd_sightings(args: argparse.Namespace) -> int:
    from .atomic_files import write_json
    from .control_points import predict_sightings

    document = predict_sightings(Path(args.points), args.cameras and Path(args.cameras),
                                 args.shots and Path(args.shots), args.images and Path(args.images))
    write_json(Path(args.output), document)
    seen = sum(1 for point in document["points"] if point["sightings"])
    log.info("%d of %d points seen in the photographs (from the %s)", seen, len(document["points"]),
             document["source"])
    return 0


def _add_earthworks(sub: argparse._SubParsersAction) -> None:
    from .earthworks.volume import BASES
    from .io.lines import LINE_FORMATS

    volume = sub.add_parser("volume", help="the volume of an elevation model over a polygon, against a base")
    volume.add_argument("dem", help="the DSM or DTM GeoTIFF")
    volume.add_argument("output", help="the JSON file to write the figures to")
    volume.add_argument("--area", required=True, help="the polygon, GeoJSON")
    volume.add_argument("--crs", default="EPSG:4326", help="the CRS of the polygon's positions")
    volume.add_argument("--base-method", choices=BASES, default="triangulate")
    volume.add_argument("--base", type=float, help="the custom base's height")
    volume.set_defaults(func=_cmd_volume)
    contours = sub.add_parser("contours", help="the contour lines of an elevation model")
    contours.add_argument("dem", help="the DSM or DTM GeoTIFF")
    contours.add_argument("output", help="the file to write")
    contours.add_argument("--interval", type=float, required=True, help="metres between contours")
    contours.add_argument("--simplify", type=float, default=0.0, help="the lines' tolerance, in the DEM's units")
    contours.add_argument("--format", choices=tuple(LINE_FORMATS), default="GPKG")
    contours.add_argument("--crs", help="the CRS to write (default: the DEM's)")
    contours.set_defaults(func=_cmd_contours)
    difference = sub.add_parser("difference", help="a later elevation model less an earlier one: the change, "
                                "its cut and fill")
    difference.add_argument("earlier", help="the earlier DSM or DTM GeoTIFF, whose grid the result takes")
    difference.add_argument("later", help="the later one")
    difference.add_argument("output", help="the GeoTIFF of the change to write, or a .json file for its figures")
    difference.add_argument("--noise", type=float, default=0.0, help="changes smaller than this (m) are none")
    difference.set_defaults(func=_cmd_difference)
    sightings = sub.add_parser("sightings", help="where surveyed points appear in the photographs: from a model's "
                               "cameras.json and shots.geojson, else from the photographs' GPS")
    sightings.add_argument("points", help='JSON: {"crs": ..., "points": [{"name", "x", "y", "z"}]}')
    sightings.add_argument("output", help="the JSON file to write")
    sightings.add_argument("--cameras", help="the model's cameras.json")
    sightings.add_argument("--shots", help="the model's shots.geojson")
    sightings.add_argument("--images", help="the photographs' folder, read when no model is given")
    sightings.set_defaults(func=_cmd_sightings)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="aeromap-engine", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("options", help="print the options in NodeODM's /options format").set_defaults(func=_cmd_options)
    sub.add_parser("version", help="print the engine's version").set_defaults(func=_cmd_version)
    run = sub.add_parser("run", help="process the images in PROJECT_DIR/images")
    run.add_argument("project_dir")
    run.add_argument("--options", help="JSON file: an array of {name, value}")
    run.set_defaults(func=_cmd_run)
    tiles = sub.add_parser("tiles", help="write the map tile pyramid (MBTiles) of a georeferenced GeoTIFF")
    tiles.add_argument("raster")
    tiles.add_argument("output", help="the .mbtiles file to write")
    tiles.add_argument("--elevation", action="store_true", help="an elevation model: colour ramp and hillshade")
    tiles.add_argument("--name", help="the layer's name (default: the raster's file name)")
    tiles.set_defaults(func=_cmd_tiles)
    worker = sub.add_parser("tile-worker", help="draw single tiles in other styles, one JSON request per line")
    worker.set_defaults(func=_cmd_tile_worker)
    crs = sub.add_parser("crs", help="print a raster's CRS as WebODM keeps it: its EPSG code, else its WKT")
    crs.add_argument("raster")
    crs.set_defaults(func=_cmd_crs)
    sub.add_parser("formulas", help="print the vegetation indices tiles can be drawn in, and the band letters"
                   ).set_defaults(func=_cmd_formulas)
    external = sub.add_parser("external", help="check products made elsewhere, staged in FOLDER under their asset "
                              "names, and with RESULTS write them there as a task's results")
    external.add_argument("folder")
    external.add_argument("results", nargs="?")
    external.set_defaults(func=_cmd_external)
    _add_export(sub)
    _add_earthworks(sub)
    args = parser.parse_args(argv)

    setup_logging()
    try:
        return args.func(args)
    except EngineError as exc:
        log.error("%s", exc)
        return exc.exit_code
    except KeyboardInterrupt:
        log.error("Interrupted")
        return 130
    except MemoryError:
        log.error("Out of memory: the machine has too little memory for this survey at these settings "
                  "(lower pc-quality, feature-quality or the image size, or use a larger machine)")
        return 1
    except Exception as exc:  # noqa: BLE001 - a bug must still end with a line that says what failed
        traceback.print_exc(file=sys.stdout)  # before the error line, which must be the last
        log.error("Internal error: %s: %s", type(exc).__name__, exc)
        return 1


if __name__ == "__main__":
    sys.exit(main())
