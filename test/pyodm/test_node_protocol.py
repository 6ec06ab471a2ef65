"""The processing node driven by PyODM, NodeODM's own client, and by plain HTTP where PyODM has no call:
every endpoint, the chunked and one-shot uploads, downloads in ranges, actions and the error answers."""

from __future__ import annotations

import http.server
import io
import json
import subprocess
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from pyodm import Node
from pyodm.exceptions import NodeResponseError, TaskFailedError
from pyodm.types import TaskStatus

from conftest import make_images, pid_alive, wait_for_status, wait_until
from nodeprocess import FAKE_ENGINE, NodeProcess

TOKEN = "s3cret"
MAX_IMAGES = 4


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory, web: str) -> Iterator[NodeProcess]:
    # The test web server is on loopback, which a node reaches only when allowed to.
    proc = NodeProcess(tmp_path_factory.mktemp("node-data"), "--token", TOKEN, "--max-images", str(MAX_IMAGES),
                       "--parallel-tasks", "1", "--webhook", f"{web}/every-task", "--allow-private-urls").start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def client(node: NodeProcess) -> Node:
    return node.client(TOKEN)


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return make_images(tmp_path_factory.mktemp("images"), MAX_IMAGES + 1)


def api(node: NodeProcess, path: str) -> str:
    return f"{node.url}{path}{'&' if '?' in path else '?'}token={TOKEN}"


class Collector(http.server.BaseHTTPRequestHandler):
    """A local web server (this machine has no outside network): serves files and records POSTed bodies."""

    files: dict[str, bytes] = {}
    posted: list[dict] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        body = self.files.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.end_headers()
        self.wfile.write(body or b"")

    def do_POST(self) -> None:  # noqa: N802
        self.posted.append({"path": self.path, **json.loads(self.rfile.read(int(self.headers["Content-Length"])))})
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def web() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def zip_bytes(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return buffer.getvalue()


# ---- node information


def test_info_reports_a_modern_nodeodm_api_and_the_engine(client: Node) -> None:
    info = client.info()
    assert client.version_greater_or_equal_than("2.2.0")
    assert info.engine == "aeromap"
    assert info.engine_version == "0.0.0-fake"
    assert info.max_images == MAX_IMAGES
    assert info.max_parallel_tasks == 1
    assert isinstance(info.task_queue_count, int)
    assert info.total_memory >= info.available_memory > 0
    assert info.cpu_cores >= 1


def test_options_are_the_engines_in_nodeodm_format(client: Node) -> None:
    expected = json.loads(subprocess.check_output([str(FAKE_ENGINE), "options"]))
    options = client.options()
    assert [o.name for o in options] == [o["name"] for o in expected]
    by_name = {o.name: o for o in options}
    assert by_name["mesh-size"].type == "int" and by_name["mesh-size"].value == "200000"
    assert by_name["end-with"].domain[-1] == "odm_postprocess"


# ---- the whole life of a task


@pytest.fixture(scope="module")
def completed(client: Node, images: list[str]):
    task = client.create_task(images[:3], {"mesh-size": "12345", "dsm": True, "no-such-option": 1},
                              name="brighton")
    task.wait_for_completion(interval=0.2)
    return task


def test_chunked_task_runs_to_completion_with_typed_options(completed) -> None:
    info = completed.info()
    assert info.status == TaskStatus.COMPLETED
    assert info.name == "brighton"
    assert info.images_count == 3
    assert info.progress == 100
    assert info.processing_time > 0
    # Typed values, unknown names dropped, the engine's post-processing option turned on.
    assert info.options == [{"name": "mesh-size", "value": 12345}, {"name": "dsm", "value": True},
                            {"name": "cog", "value": True}]


def test_console_output_pages_like_nodeodm(completed) -> None:
    output = completed.output()
    assert "[INFO] Running stage dataset" in output
    assert "[WARNING] a line on stderr" in output
    assert not any("::progress::" in line for line in output)
    assert completed.output(2) == output[2:]
    assert completed.output(-2) == output[-2:]
    assert completed.output(10_000) == []
    assert completed.info(with_output=-1).output == output[-1:]
    assert completed.info(with_output=0).output == output


def test_download_assets_holds_the_odm_layout(completed, tmp_path: Path) -> None:
    completed.download_assets(str(tmp_path))
    assert (tmp_path / "odm_orthophoto" / "odm_orthophoto.tif").is_file()
    assert (tmp_path / "odm_georeferencing" / "odm_georeferenced_model.laz").is_file()
    assert json.loads((tmp_path / "images.json").read_text()) == [
        {"filename": f"IMG_{i:04d}.JPG"} for i in range(3)]
    assert "[INFO] Fake engine finished" in (tmp_path / "task_output.txt").read_text()
    assert not (tmp_path / "images").exists()


def test_restart_with_new_options_reruns_from_the_given_stage(node: NodeProcess, completed) -> None:
    runs = node.task_dir(completed.uuid) / "fake" / "runs.txt"
    before = runs.read_text().split()
    assert completed.restart({"mesh-size": 999, "rerun-from": "opensfm"})
    completed.wait_for_completion(interval=0.2)
    info = completed.info()
    assert info.status == TaskStatus.COMPLETED
    assert {"name": "mesh-size", "value": 999} in info.options
    assert runs.read_text().split()[len(before):] == ["opensfm", "odm_orthophoto"]
    output = completed.output()
    assert output.count("[INFO] Fake engine finished") == 1  # the console starts again with the run


def test_cancel_stops_the_engine_and_a_restart_finishes(node: NodeProcess, client: Node,
                                                        images: list[str]) -> None:
    task = client.create_task(images[:2], {"fake-seconds": 20})
    wait_for_status(task, {TaskStatus.RUNNING})
    pid_file = node.task_dir(task.uuid) / "fake" / "pid"
    wait_until(pid_file.exists)
    assert task.cancel()
    assert task.info().status == TaskStatus.CANCELED
    assert not pid_alive(int(pid_file.read_text()))
    assert task.cancel()  # cancelling again is harmless
    with pytest.raises(TaskFailedError):
        task.wait_for_completion(interval=0.2)
    assert task.restart({"fake-seconds": 0})
    task.wait_for_completion(interval=0.2)
    assert task.info().status == TaskStatus.COMPLETED


def test_tasks_wait_in_the_queue_for_a_free_slot(client: Node, images: list[str]) -> None:
    first = client.create_task(images[:2], {"fake-seconds": 1})
    second = client.create_task(images[:2], {"fake-seconds": 0})
    wait_for_status(first, {TaskStatus.RUNNING})
    assert second.info().status == TaskStatus.QUEUED
    assert second.info().processing_time == -1
    assert client.info().task_queue_count == 2
    second.wait_for_completion(interval=0.2)
    assert first.info().status == TaskStatus.COMPLETED


def test_remove_deletes_the_task_and_a_second_remove_fails(node: NodeProcess, client: Node,
                                                           images: list[str]) -> None:
    task = client.create_task(images[:2])
    task.wait_for_completion(interval=0.2)
    assert {"uuid": task.uuid} in requests.get(api(node, "/task/list")).json()
    assert task.remove()
    assert not node.task_dir(task.uuid).exists()
    assert {"uuid": task.uuid} not in requests.get(api(node, "/task/list")).json()
    with pytest.raises(NodeResponseError, match="not found"):
        task.info()
    with pytest.raises(NodeResponseError, match="not found"):
        task.remove()


def test_a_failing_engine_fails_the_task_with_its_reason(client: Node, images: list[str]) -> None:
    task = client.create_task(images[:2], {"fake-exit": 3})
    with pytest.raises(TaskFailedError):
        task.wait_for_completion(interval=0.2)
    info = task.info()
    assert info.status == TaskStatus.FAILED
    assert info.last_error == "Cannot process dataset: Fake failure in dataset"


# ---- errors


def test_unknown_uuid_is_an_error_everywhere(client: Node) -> None:
    task = client.get_task("00000000-0000-4000-8000-000000000000")
    for call in (task.info, task.output, task.cancel, task.remove, task.restart):
        with pytest.raises(NodeResponseError, match="not found"):
            call()


def test_invalid_options_are_refused_with_their_reasons(client: Node, completed, images: list[str]) -> None:
    with pytest.raises(NodeResponseError) as refused:
        client.create_task(images[:2], {"mesh-octree-depth": 20, "dsm": "maybe", "mesh-size": "12abc"})
    errors = json.loads(str(refused.value))
    assert [e["name"] for e in errors] == ["mesh-size", "mesh-octree-depth", "dsm"]
    assert all(e["error"] for e in errors)
    with pytest.raises(NodeResponseError, match="orthophoto-resolution"):
        completed.restart({"orthophoto-resolution": 0})


def test_too_many_images_are_refused_as_they_arrive(node: NodeProcess, client: Node, images: list[str]) -> None:
    with pytest.raises(NodeResponseError, match="More than 4 images uploaded, but this node can only process up to 4"):
        client.create_task(images[:5], parallel_uploads=1)


def test_too_many_images_in_a_zip_are_refused_at_commit(node: NodeProcess, client: Node, images: list[str],
                                                        tmp_path: Path) -> None:
    archive = tmp_path / "images.zip"
    with zipfile.ZipFile(archive, "w") as packed:
        for image in images[:5]:
            packed.write(image, Path(image).name)
    before = set((node.data_dir / "uploads").iterdir())
    with pytest.raises(NodeResponseError, match="5 images uploaded, but this node can only process up to 4"):
        client.create_task([str(archive)])
    assert set((node.data_dir / "uploads").iterdir()) == before


def test_a_wrong_or_missing_token_is_refused(node: NodeProcess) -> None:
    for token in ("wrong", ""):
        with pytest.raises(NodeResponseError, match="Invalid authentication token"):
            node.client(token).info()
    assert requests.get(f"{node.url}/auth/info").json()["loginUrl"] is None
    assert requests.post(f"{node.url}/auth/login").json() == {"error": "Not available"}


def test_actions_read_urlencoded_json_and_multipart_bodies(node: NodeProcess, completed) -> None:
    url = api(node, "/task/cancel")
    assert requests.post(url, data={"uuid": completed.uuid}).json() == {"success": True}
    assert requests.post(url, json={"uuid": completed.uuid}).json() == {"success": True}
    assert requests.post(url, files={"uuid": (None, completed.uuid)}).json() == {"success": True}
    assert requests.post(url, data={}).json() == {"error": "uuid param missing."}
    answer = requests.post(api(node, "/task/restart"), data={"uuid": completed.uuid, "options": "[]"}).json()
    assert answer == {"success": True}
    assert requests.post(api(node, "/task/restart"), data={"uuid": completed.uuid}).json() == {
        "success": False, "error": "Task cannot be restarted"}
    completed.wait_for_completion(interval=0.2)


def test_upload_without_files_must_not_be_retried(node: NodeProcess) -> None:
    uuid = requests.post(api(node, "/task/new/init"), files={"name": (None, "x")}).json()["uuid"]
    answer = requests.post(api(node, f"/task/new/upload/{uuid}"), files={"name": (None, "x")}).json()
    assert answer == {"error": "Need at least 1 file.", "noRetry": True}
    assert requests.post(api(node, "/task/new/upload/nope"), files={"images": ("a.jpg", b"x")}).json() == {
        "error": "Invalid uuid (not found)"}


# ---- uploads beyond PyODM's chunked flow


def test_one_shot_upload_takes_files_before_fields_and_set_uuid(node: NodeProcess, client: Node,
                                                                 images: list[str]) -> None:
    uuid = "0f1e2d3c-4b5a-4697-8899-aabbccddeeff"
    files = [("images", (Path(p).name, open(p, "rb"), "image/jpeg")) for p in images[:2]]
    fields = [("name", (None, "one shot")), ("options", (None, json.dumps([{"name": "dsm", "value": "1"}]))),
              ("dateCreated", (None, "1700000000000"))]
    answer = requests.post(api(node, "/task/new"), files=files + fields, headers={"set-uuid": uuid}).json()
    assert answer == {"uuid": uuid}
    task = client.get_task(uuid)
    task.wait_for_completion(interval=0.2)
    info = task.info()
    assert (info.name, info.images_count) == ("one shot", 2)
    assert {"name": "dsm", "value": True} in info.options
    assert int(info.date_created.timestamp()) == 1_700_000_000
    again = requests.post(api(node, "/task/new"), files=files[:1], headers={"set-uuid": uuid}).json()
    assert again == {"error": f"Invalid set-uuid: {uuid}"}
    bad = requests.post(api(node, "/task/new"), files=files[:1], headers={"set-uuid": "../x"}).json()
    assert bad == {"error": "Invalid set-uuid: ../x"}
    assert requests.post(api(node, "/task/new"), files=fields).json() == {
        "error": "Need at least 1 file or a zip file url."}


def test_gcp_geo_and_seed_files_reach_the_engine(node: NodeProcess, client: Node, images: list[str],
                                                  tmp_path: Path) -> None:
    (tmp_path / "my_points.txt").write_text("EPSG:4326\n1 2 3 10 20 IMG_0000.JPG\n")
    (tmp_path / "geo.txt").write_text("EPSG:4326\nIMG_0000.JPG 1 2 3\n")
    (tmp_path / "seed.zip").write_bytes(zip_bytes({"opensfm/seeded.json": b"{}"}))
    task = client.create_task(images[:2] + [str(tmp_path / n) for n in ("my_points.txt", "geo.txt", "seed.zip")])
    task.wait_for_completion(interval=0.2)
    assert task.info().images_count == 2
    output = task.output()
    assert "[INFO] gcp_list.txt: present" in output and "[INFO] geo.txt: present" in output
    folder = node.task_dir(task.uuid)
    assert (folder / "gcp_list.txt").read_text() == (tmp_path / "my_points.txt").read_text()
    assert (folder / "geo.txt").read_text() == (tmp_path / "geo.txt").read_text()
    assert (folder / "opensfm" / "seeded.json").is_file()
    assert sorted(p.name for p in (folder / "images").iterdir()) == ["IMG_0000.JPG", "IMG_0001.JPG"]


def test_an_unsafe_seed_zip_is_refused(node: NodeProcess, client: Node, images: list[str],
                                       tmp_path: Path) -> None:
    (tmp_path / "seed.zip").write_bytes(zip_bytes({"../../escaped.txt": b"x"}))
    with pytest.raises(NodeResponseError, match="seed.zip"):
        client.create_task(images[:2] + [str(tmp_path / "seed.zip")])
    assert not list(node.data_dir.parent.rglob("escaped.txt"))


def test_zipurl_fetches_images_over_http_only(node: NodeProcess, client: Node, web: str,
                                              images: list[str]) -> None:
    Collector.files["/images.zip"] = zip_bytes({f"photos/{Path(p).name}": Path(p).read_bytes()
                                                for p in images[:3]})
    uuid = requests.post(api(node, "/task/new"), files={"zipurl": (None, f"{web}/images.zip")}).json()["uuid"]
    task = client.get_task(uuid)
    task.wait_for_completion(interval=0.2)
    assert task.info().images_count == 3
    for url in ("file:///etc/passwd", f"{web}/missing.zip"):
        answer = requests.post(api(node, "/task/new"), files={"zipurl": (None, url)}).json()
        assert "error" in answer


def test_zipurl_reaches_only_public_addresses_by_default(tmp_path: Path, web: str) -> None:
    closed = NodeProcess(tmp_path / "closed").start()
    try:
        for url in (f"{web}/images.zip", f"{web.replace('127.0.0.1', 'localhost')}/images.zip",
                    "http://169.254.169.254/latest/meta-data/"):
            answer = requests.post(api(closed, "/task/new"), files={"zipurl": (None, url)}).json()
            assert "private network" in answer["error"] and "--allow-private-urls" in answer["error"], answer
    finally:
        closed.stop()


def test_outputs_and_skip_post_processing(client: Node, images: list[str], tmp_path: Path) -> None:
    task = client.create_task(images[:2], skip_post_processing=True,
                              outputs=["opensfm/reconstruction.json", "../../../etc/passwd"])
    task.wait_for_completion(interval=0.2)
    assert not any(o["name"] == "cog" for o in task.info().options)
    with zipfile.ZipFile(task.download_zip(str(tmp_path))) as archive:
        assert archive.namelist() == ["opensfm/reconstruction.json"]


def test_webhooks_receive_the_task_info_and_images(client: Node, web: str, images: list[str]) -> None:
    task = client.create_task(images[:2], webhook=f"{web}/hook")
    task.wait_for_completion(interval=0.2)
    wait_until(lambda: {"/hook", "/every-task"} <= {p["path"] for p in Collector.posted if p["uuid"] == task.uuid})
    payload = next(p for p in Collector.posted if p["uuid"] == task.uuid and p["path"] == "/hook")
    assert payload["status"]["code"] == TaskStatus.COMPLETED.value
    assert payload["images"] == [{"filename": "IMG_0000.JPG"}, {"filename": "IMG_0001.JPG"}]


# ---- downloads


def test_big_archives_download_in_parallel_ranges(node: NodeProcess, client: Node, images: list[str],
                                                  tmp_path: Path) -> None:
    task = client.create_task(images[:2], {"fake-output-mb": 12})
    task.wait_for_completion(interval=0.2)
    url = api(node, f"/task/{task.uuid}/download/all.zip")
    whole = requests.get(url)
    assert whole.headers["Accept-Ranges"] == "bytes"
    assert whole.headers["Content-Type"] == "application/zip"
    assert whole.headers["Content-Disposition"] == "attachment; filename=all.zip"
    size = int(whole.headers["Content-Length"])
    part = requests.get(url, headers={"Range": "bytes=100-199"})
    assert part.status_code == 206
    assert part.headers["Content-Range"] == f"bytes 100-199/{size}"
    assert part.content == whole.content[100:200]
    assert requests.get(url, headers={"Range": f"bytes={size + 10}-"}).status_code == 416
    # 1 MB pieces: PyODM fetches the 12 MB archive in ranges and joins them.
    path = task.download_zip(str(tmp_path), parallel_downloads=4, parallel_chunks_size=1)
    assert Path(path).read_bytes() == whole.content
    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None
        assert archive.getinfo("odm_orthophoto/odm_orthophoto.tif").file_size == 12 * 2**20
    answer = requests.get(api(node, f"/task/{task.uuid}/download/orthophoto.tif")).json()
    assert answer == {"error": "Invalid asset"}
