"""The one-agent edit the performance scripts time, on a pod the compile bench generates
(`target/release/deps/compile-* --generate DIR 10`): imported by ab-edit.py, floor.py and
profile-edit.py, so that all three narrow the same grant."""
import os, shutil

# agent-10's own grant and surface; the edit drops its last tool.
GRANT = "          allow: [op_0, op_1, op_2, op_3, op_4, op_5, op_6, op_7, op_8, op_9]\n      surfaces: [service://tools-11]"


def copy(src, dst):
    """A fresh copy of the pod at `src` (its file and the services' descriptors) in `dst`."""
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    shutil.copy(os.path.join(src, 'claw-pod.yml'), dst)
    shutil.copytree(os.path.join(src, 'svc'), os.path.join(dst, 'svc'))


def narrowed(text):
    """The pod's text with one agent service's grant narrowed by a tool."""
    edited = text.replace(GRANT, GRANT.replace(", op_9", ""), 1)
    assert edited != text, "not the generator's pod"
    return edited
