"""A stand-in LIBERO asset root, built locally, for libero_10 task 8 (two moka pots, a stove).

LIBERO's scene assets (meshes, textures) are downloaded from the Hub, which tests may not
reach, so the LIBERO run test builds the few files this one task's scene reads: the kitchen
table scene (robosuite's own table arena with LIBERO's texture names, textures copied from
robosuite's wheel), a flat stove with one knob hinge and its ``cook_region`` site, and a moka
pot (a cylinder). The model has the real scene's degrees of freedom (the arm, two free pots,
the knob: 47 numbers in LIBERO's flattened initial states), so LIBERO's own fixed initial
states load into it. Run in .venv-bench (it imports robosuite): ``python libero_standin.py DIR``.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

_TEXTURES = [  # (robosuite's file, the name LIBERO's scene or style asks for)
    ("light-gray-floor-tile.png", "gray_ceramic_tile.png"),
    ("light-gray-plaster.png", "yellow_linen_wall_texture.png"),
    ("ceramic.png", "ceramic.png"),
    ("steel-brushed.png", "steel-brushed.png"),
    ("light-gray-floor-tile.png", "light-gray-floor-tile.png"),
]

_SITES = """      <site name="bottom_site" pos="0 0 0" size="0.001" rgba="0 0 0 0"/>
      <site name="top_site" pos="0 0 {top}" size="0.001" rgba="0 0 0 0"/>
      <site name="horizontal_radius_site" pos="{r} {r} 0" size="0.001" rgba="0 0 0 0"/>"""

STOVE = f"""<mujoco model="flat_stove">
  <worldbody>
    <body>
      <body name="object">
        <geom name="base" type="box" size="0.1 0.1 0.02" pos="0 0 0.02" group="0"/>
        <body name="knob" pos="0.09 0.09 0.045">
          <joint name="knob_joint" type="hinge" axis="0 0 1" range="-0.1 2.5" limited="true"
                 damping="0.1"/>
          <geom name="knob_geom" type="cylinder" size="0.01 0.005" group="0"/>
        </body>
        <site name="burner" pos="0 0 0.041" quat="1 0 0 0" size="0.04 0.001" type="cylinder"
              rgba="1 0 0 0"/>
        <site name="cook_region" pos="0 0 0.05" quat="1 0 0 0" size="0.08 0.08 0.01"
              type="box" rgba="0 1 0 0"/>
      </body>
{_SITES.format(top=0.04, r=0.1)}
    </body>
  </worldbody>
</mujoco>
"""

MOKA_POT = f"""<mujoco model="moka_pot">
  <worldbody>
    <body>
      <body name="object">
        <geom name="pot" type="cylinder" size="0.03 0.05" pos="0 0 0.05" group="0"
              density="300"/>
      </body>
{_SITES.format(top=0.1, r=0.03)}
    </body>
  </worldbody>
</mujoco>
"""


def build(root: Path) -> Path:
    """Write the stand-in asset root at ``root`` (LIBERO's five asset folders and the files)."""
    import robosuite  # in .venv-bench only

    assets = Path(robosuite.__file__).parent / "models" / "assets"
    for name in ("articulated_objects", "stable_scanned_objects", "turbosquid_objects",
                 "stable_hope_objects", "scenes", "textures", "turbosquid_objects/moka_pot"):
        (root / name).mkdir(parents=True, exist_ok=True)
    for source, target in _TEXTURES:
        shutil.copy(assets / "textures" / source, root / "textures" / target)
    arena = (assets / "arenas" / "table_arena.xml").read_text()
    arena = arena.replace('name="tex-light-gray-plaster"', 'name="tex-wall"')
    arena = arena.replace('texture="tex-light-gray-plaster"', 'texture="tex-wall"')
    (root / "scenes" / "libero_kitchen_tabletop_base_style.xml").write_text(arena)
    (root / "articulated_objects" / "flat_stove.xml").write_text(STOVE)
    (root / "turbosquid_objects" / "moka_pot" / "moka_pot.xml").write_text(MOKA_POT)
    return root


if __name__ == "__main__":
    print(build(Path(sys.argv[1])))
