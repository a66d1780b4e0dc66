"""brax_render: quaternion algebra, camera and light placement, posing a model, frames of a real Brax task and the
error where MuJoCo cannot render."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from brax_marks import needs_brax
from sf_run import run_python

from sf_examples.brax.brax_render import (
    MIN_CAMERA_DISTANCE,
    BraxRenderError,
    axis_angle_quat,
    create_camera,
    create_light,
    quat_mul,
    rotate,
)


def test_quat_mul_is_the_hamilton_product() -> None:
    one, i, j, k = np.eye(4)
    assert np.allclose(quat_mul(i, j), k) and np.allclose(quat_mul(j, i), -k)
    assert np.allclose(quat_mul(i, i), -one)
    q = np.array([0.5, 0.5, -0.5, 0.5])
    assert np.allclose(quat_mul(one, q), q) and np.allclose(quat_mul(q, one), q)
    batch = quat_mul(np.stack([i, j]), np.stack([j, k]))  # broadcasts over leading dimensions
    assert np.allclose(batch, [k, i])


def test_composed_rotations_apply_right_to_left() -> None:
    yaw = axis_angle_quat([0, 0, 1], np.pi / 2)  # x -> y
    roll = axis_angle_quat([1, 0, 0], np.pi / 2)  # y -> z
    assert np.allclose(rotate([1, 0, 0], yaw), [0, 1, 0])
    assert np.allclose(rotate([1, 0, 0], quat_mul(roll, yaw)), [0, 0, 1])
    assert np.isclose(np.linalg.norm(quat_mul(roll, yaw)), 1.0)


def test_camera_follows_the_root_body_and_fits_the_robot() -> None:
    qp = SimpleNamespace(x=SimpleNamespace(pos=np.array([[3.0, -1.0, 0.5], [3.0, 1.0, 0.5], [3.0, -1.0, 2.5]])))
    camera = create_camera(120, 160, qp, ssaa=2)
    assert np.allclose(camera.lookat, [3.0, -1.0, 0.5])
    assert camera.distance == pytest.approx(4.0 * 2.0)  # four robot sizes (largest body distance from the root)
    assert (camera.height, camera.width, camera.ssaa) == (120, 160, 2)
    tiny = SimpleNamespace(x=SimpleNamespace(pos=np.zeros((2, 3))))
    assert create_camera(10, 10, tiny).distance == MIN_CAMERA_DISTANCE
    assert np.allclose(create_camera(10, 10, qp, target=[1, 2, 3]).lookat, [1, 2, 3])
    with pytest.raises(ValueError, match="ssaa"):
        create_camera(10, 10, qp, ssaa=0)


def test_light_is_above_the_target_and_shines_at_it() -> None:
    target = np.array([1.0, 2.0, 0.0])
    light = create_light(target)
    assert light.pos[2] > 4.0
    to_target = (target - light.pos) / np.linalg.norm(target - light.pos)
    assert np.allclose(light.direction, to_target)


FRAMES_SCRIPT = """
import numpy as np
from sample_factory.utils.attr_dict import AttrDict
from sf_examples.brax.train_brax import make_brax_env

env = make_brax_env("inverted_pendulum", AttrDict(env_agents=2, brax_render_res=64, seed=0), render_mode="rgb_array")
env.reset()
first = env.render()
for _ in range(20):
    env.step(np.ones((2, 1), dtype=np.float32))
later = env.render()
env.close()
print("FRAMES", first.shape, first.dtype, round(float(first.std()), 1), int(np.abs(later.astype(int) - first).sum()))
"""


@needs_brax
def test_frames_of_a_brax_task() -> None:
    """In a fresh process: MuJoCo picks its GL backend when first imported, which the family's import arranges."""
    result = run_python(["-c", FRAMES_SCRIPT], timeout=240)
    assert result.returncode == 0, result.explain()
    line = next(line for line in result.output.splitlines() if line.startswith("FRAMES"))
    std, moved = line.rsplit(" ", 2)[1:]
    assert "(64, 64, 3)" in line and "uint8" in line, line
    assert float(std) > 10, line  # a picture, not a blank frame
    assert int(moved) > 0, line  # the cart moved between the frames


@needs_brax
def test_create_scene_poses_the_model() -> None:
    from sf_examples.brax.brax_env import require_brax
    from sf_examples.brax.brax_render import create_scene

    sys = require_brax().get_environment("inverted_pendulum").sys
    qp = SimpleNamespace(q=np.array([0.3, 0.1]), qd=np.array([0.0, 0.0]))
    data = create_scene(qp, sys)
    assert np.allclose(data.qpos, [0.3, 0.1])
    assert not np.allclose(data.xpos[1:], 0.0)  # forward kinematics placed the bodies


@needs_brax
def test_a_renderer_that_cannot_start_names_the_fixes(monkeypatch: pytest.MonkeyPatch) -> None:
    import mujoco

    from sf_examples.brax.brax_render import BraxRenderer

    def no_gl(*args, **kwargs):
        raise mujoco.FatalError("gladLoadGL error")

    monkeypatch.setattr(mujoco, "Renderer", no_gl)
    env = SimpleNamespace(
        pipeline_state=lambda index: None,
        brax_env=SimpleNamespace(sys=SimpleNamespace(mj_model=mujoco.MjModel.from_xml_string("<mujoco/>"))),
    )
    with pytest.raises(BraxRenderError, match="MUJOCO_GL") as error:
        BraxRenderer(env, "rgb_array", 32).render()
    assert "--no_render" in str(error.value) and "gladLoadGL" in str(error.value)


def test_a_window_that_cannot_open_names_the_ways_out(monkeypatch: pytest.MonkeyPatch) -> None:
    import cv2

    from sf_examples.brax.brax_render import BraxRenderer

    def no_gui(*args, **kwargs):
        raise cv2.error("The function is not implemented. Rebuild the library with GTK+")

    monkeypatch.setattr(cv2, "imshow", no_gui)
    with pytest.raises(BraxRenderError, match="--save_video --no_render") as error:
        BraxRenderer._show(np.zeros((4, 4, 3), dtype=np.uint8))
    assert "not implemented" in str(error.value) and "display" in str(error.value)
