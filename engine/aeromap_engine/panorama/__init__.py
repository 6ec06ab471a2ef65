"""360° panoramas as photographs: every equirectangular panorama (a 360° camera on a pole or a drone) is cut into
perspective views that share its centre, the faces of a cube around it (faces.py, pure geometry), written as
photographs with the panorama's position and time (split.py), so that the rest of the pipeline takes them as any
pinhole photographs. The views overlap neighbouring panoramas' views, not each other, so matching pairs them by
station (sfm/pairs.py)."""
