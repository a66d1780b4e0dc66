"""Frames of a Brax env for enjoy's window and videos, drawn by MuJoCo's renderer.

Brax tasks are MuJoCo models (``sys.mj_model``), so a physics state of one copy (``q``, ``qd``) is posed on an
``MjData`` (:func:`create_scene`), seen from a camera that follows the robot (:func:`create_camera`) under an extra
directional light above it (:func:`create_light`). Where MuJoCo cannot open an offscreen GL context (no EGL or
OSMesa library), :class:`BraxRenderer` raises one error naming the cause and the ways out.

Nothing here imports jax, brax or MuJoCo until a frame is drawn.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# where the camera sits relative to the robot: a bit behind and above, looking slightly down
CAMERA_AZIMUTH_DEG = 90.0
CAMERA_ELEVATION_DEG = -25.0
CAMERA_DISTANCE_PER_SIZE = 4.0  # camera distance in robot sizes (largest distance of a body from the root)
MIN_CAMERA_DISTANCE = 2.5
LIGHT_HEIGHT = 5.0
LIGHT_TILT_DEG = 20.0


class BraxRenderError(RuntimeError):
    """Frames cannot be drawn or shown here; the message names the cause and the ways out."""


def quat_mul(u: Any, v: Any) -> np.ndarray:
    """The Hamilton product ``u * v`` of quaternions ``(w, x, y, z)`` (Brax's and MuJoCo's order); broadcasts over
    leading dimensions. Rotating by ``u * v`` is rotating by ``v`` first, then by ``u``."""
    u, v = np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)
    uw, ux, uy, uz = np.moveaxis(u, -1, 0)
    vw, vx, vy, vz = np.moveaxis(v, -1, 0)
    return np.stack(
        [
            uw * vw - ux * vx - uy * vy - uz * vz,
            uw * vx + ux * vw + uy * vz - uz * vy,
            uw * vy - ux * vz + uy * vw + uz * vx,
            uw * vz + ux * vy - uy * vx + uz * vw,
        ],
        axis=-1,
    )


def axis_angle_quat(axis: Any, angle_rad: float) -> np.ndarray:
    """The unit quaternion of a rotation by ``angle_rad`` about ``axis``."""
    axis = np.asarray(axis, dtype=np.float64)
    axis = axis / np.linalg.norm(axis)
    return np.concatenate([[np.cos(angle_rad / 2)], np.sin(angle_rad / 2) * axis])


def rotate(vec: Any, quat: Any) -> np.ndarray:
    """``vec`` rotated by the unit quaternion ``quat`` (``q * (0, vec) * conj(q)``)."""
    quat = np.asarray(quat, dtype=np.float64)
    conj = quat * np.array([1.0, -1.0, -1.0, -1.0])
    return quat_mul(quat_mul(quat, np.concatenate([[0.0], np.asarray(vec, dtype=np.float64)])), conj)[1:]


@dataclass
class Camera:
    """A camera orbiting ``lookat``; frames are drawn ``ssaa`` times larger and shrunk (supersampling)."""

    height: int
    width: int
    lookat: np.ndarray
    distance: float
    azimuth: float = CAMERA_AZIMUTH_DEG
    elevation: float = CAMERA_ELEVATION_DEG
    ssaa: int = 1

    def mjv_camera(self) -> Any:
        """The same camera as MuJoCo's ``MjvCamera`` (a free camera)."""
        import mujoco

        cam = mujoco.MjvCamera()
        cam.type = mujoco.mjtCamera.mjCAMERA_FREE
        cam.lookat[:] = self.lookat
        cam.distance, cam.azimuth, cam.elevation = self.distance, self.azimuth, self.elevation
        return cam


@dataclass
class Light:
    """A white directional light at ``pos`` shining along ``direction`` (a unit vector)."""

    pos: np.ndarray
    direction: np.ndarray
    diffuse: np.ndarray = field(default_factory=lambda: np.array([0.7, 0.7, 0.7]))


def _positions(qp: Any) -> np.ndarray | None:
    """World positions of the bodies in a Brax physics state (``x.pos``), if it has them."""
    x = getattr(qp, "x", None)
    pos = getattr(x, "pos", None)
    return None if pos is None else np.asarray(pos, dtype=np.float64).reshape(-1, 3)


def create_camera(height: int, width: int, qp: Any, ssaa: int = 1, sys: Any = None, target: Any = None) -> Camera:
    """A camera for ``height`` x ``width`` frames looking at ``target`` (default: the first body of ``qp``, the
    robot's root), far enough to see the whole robot: its size is the largest distance of a body of ``qp`` from the
    root (without body positions, ``sys.mj_model.stat.extent``, which counts the floor too)."""
    if height < 1 or width < 1 or ssaa < 1:
        raise ValueError(f"create_camera: height={height}, width={width} and ssaa={ssaa} must all be >= 1")
    positions = _positions(qp)
    has_bodies = positions is not None and len(positions) > 0
    if target is None:
        target = positions[0] if has_bodies else np.zeros(3)
    if has_bodies:
        size = float(np.linalg.norm(positions - positions[0], axis=1).max())
    else:
        size = float(sys.mj_model.stat.extent) / CAMERA_DISTANCE_PER_SIZE if sys is not None else 1.0
    distance = max(MIN_CAMERA_DISTANCE, CAMERA_DISTANCE_PER_SIZE * size)
    return Camera(int(height), int(width), np.asarray(target, dtype=np.float64).copy(), distance, ssaa=int(ssaa))


def create_light(target: Any) -> Light:
    """A light ``LIGHT_HEIGHT`` above ``target``, tilted ``LIGHT_TILT_DEG`` about the x axis, shining at it."""
    target = np.asarray(target, dtype=np.float64)
    offset = rotate([0.0, 0.0, LIGHT_HEIGHT], axis_angle_quat([1.0, 0.0, 0.0], np.deg2rad(LIGHT_TILT_DEG)))
    direction = -offset / np.linalg.norm(offset)
    return Light(pos=target + offset, direction=direction)


def create_scene(qp: Any, sys: Any, data: Any = None) -> Any:
    """An ``MjData`` of ``sys.mj_model`` posed as the physics state ``qp`` (``q``/``qd``, or ``qpos``/``qvel``)
    with forward kinematics done; pass ``data`` to reuse one."""
    import mujoco

    model = sys.mj_model
    data = mujoco.MjData(model) if data is None else data
    data.qpos[:] = np.asarray(getattr(qp, "q", None) if hasattr(qp, "q") else qp.qpos)
    qd = getattr(qp, "qd", None) if hasattr(qp, "qd") else getattr(qp, "qvel", None)
    if qd is not None:
        data.qvel[:] = np.asarray(qd)
    mujoco.mj_forward(model, data)
    return data


def add_light(scene: Any, light: Light) -> None:
    """Append ``light`` to a MuJoCo ``MjvScene`` after ``update_scene`` (which rebuilds the scene's lights)."""
    import mujoco

    if scene.nlight >= len(scene.lights):
        return
    slot = scene.lights[scene.nlight]
    slot.pos[:], slot.dir[:] = light.pos, light.direction
    slot.diffuse[:], slot.ambient[:], slot.specular[:] = light.diffuse, 0.1, 0.3
    slot.type = mujoco.mjtLightType.mjLIGHT_DIRECTIONAL
    slot.castshadow = True
    scene.nlight += 1


class BraxRenderer:
    """Frames of copy 0 of a :class:`~sf_examples.brax.brax_env.BraxEnv`, ``brax_video_res_px`` pixels square.

    ``render_mode="rgb_array"`` returns each frame; ``"human"`` also shows it in an OpenCV window.
    """

    SSAA = 2

    def __init__(self, env: Any, render_mode: str | None = "rgb_array", brax_video_res_px: int = 200) -> None:
        if brax_video_res_px < 1:
            raise ValueError(f"--brax_render_res={brax_video_res_px} must be >= 1")
        self.env = env
        self.render_mode = render_mode
        self.res = int(brax_video_res_px)
        self._renderer: Any = None
        self._data: Any = None

    def _mujoco_renderer(self, sys: Any) -> Any:
        if self._renderer is None:
            import mujoco

            size = self.res * self.SSAA
            model = sys.mj_model
            model.vis.global_.offwidth = max(model.vis.global_.offwidth, size)
            model.vis.global_.offheight = max(model.vis.global_.offheight, size)
            try:
                self._renderer = mujoco.Renderer(model, height=size, width=size)
            except Exception as exc:  # the GL backends fail with assorted exception types
                raise BraxRenderError(
                    f"Brax frames are drawn by MuJoCo's offscreen renderer, which could not start with "
                    f"MUJOCO_GL={os.environ.get('MUJOCO_GL', '(unset)')} ({type(exc).__name__}: {exc}). Install EGL "
                    "or OSMesa (e.g. apt-get install libegl1 or libosmesa6) and set MUJOCO_GL=egl or MUJOCO_GL=osmesa "
                    "before anything imports mujoco, or watch without frames: --no_render and no --save_video"
                ) from exc
        return self._renderer

    def render(self) -> np.ndarray:
        """The current frame (``uint8 [res, res, 3]``)."""
        qp = self.env.pipeline_state(0)
        sys = self.env.brax_env.sys
        renderer = self._mujoco_renderer(sys)
        self._data = create_scene(qp, sys, self._data)
        camera = create_camera(self.res, self.res, qp, self.SSAA, sys)
        renderer.update_scene(self._data, camera=camera.mjv_camera())
        add_light(renderer.scene, create_light(camera.lookat))
        frame = renderer.render()
        if self.SSAA > 1:
            import cv2

            frame = cv2.resize(frame, (self.res, self.res), interpolation=cv2.INTER_AREA)
        if self.render_mode == "human":
            self._show(frame)
        return frame

    @staticmethod
    def _show(frame: np.ndarray) -> None:
        import cv2

        try:
            cv2.imshow("brax", frame[..., ::-1])
            cv2.waitKey(1)
        except cv2.error as exc:
            raise BraxRenderError(
                f"Cannot open a window to show Brax frames (OpenCV: {str(exc).strip().splitlines()[-1]}): OpenCV needs "
                "a display and its GUI build (opencv-python, not opencv-python-headless). Without them, record a "
                "video instead (--save_video --no_render) or watch without frames (--no_render)"
            ) from exc

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
