// proj4 ships only WGS 84 and Web Mercator; the engine writes DEMs in UTM, whose definition follows from
// the EPSG code alone, so no lookup service (unreachable offline) is needed.

/** A proj4 definition for the EPSG code, or null when it is not one we can build. */
export function proj4Definition(epsg: number): string | null {
  if (epsg === 4326) return '+proj=longlat +datum=WGS84 +no_defs';
  if (epsg === 3857) return '+proj=merc +a=6378137 +b=6378137 +lat_ts=0 +lon_0=0 +x_0=0 +y_0=0 +k=1 +units=m +nadgrids=@null +no_defs';
  const zone = epsg % 100;
  const family = Math.floor(epsg / 100);
  if (zone < 1 || zone > 60) return null;
  if (family === 326) return `+proj=utm +zone=${zone} +datum=WGS84 +units=m +no_defs`;
  if (family === 327) return `+proj=utm +zone=${zone} +south +datum=WGS84 +units=m +no_defs`;
  // NAD83 / UTM zones 1N–23N: what surveys in North America are often delivered in.
  if (family === 269 && zone <= 23) return `+proj=utm +zone=${zone} +datum=NAD83 +units=m +no_defs`;
  return null;
}

/** The EPSG code in a GeoTIFF's geokeys: projected first, then geographic. */
export function epsgFromGeoKeys(keys: Record<string, unknown>): number | null {
  for (const name of ['ProjectedCSTypeGeoKey', 'GeographicTypeGeoKey']) {
    const value = keys[name];
    // 32767 means "user-defined", which carries no code.
    if (typeof value === 'number' && value > 0 && value !== 32767) return value;
  }
  return null;
}
