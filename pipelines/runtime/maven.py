"""Maven: a set of coordinates resolved by ``mvn`` into a local repository, as a classpath.

:mod:`pipelines.runtime.jvm` says which coordinates deltasink needs and where they are cached;
this module only writes the POM that lists them and runs ``mvn dependency:build-classpath`` on
it, which downloads them and their dependencies once and then reads them from the repository.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from pipelines.errors import EnvironmentSetupError


def pom(name: str, coordinates: Iterable[str], exclude: tuple[str, str] | None = None) -> str:
    """A POM whose dependencies are ``coordinates`` (``group:artifact:version`` each).

    Args:
        name: its artifact id.
        coordinates: the dependencies.
        exclude: ``(coordinate, "group:artifact")``: leave that artifact out of that
            coordinate's own dependencies.
    """
    deps = []
    for text in coordinates:
        group, artifact, version = text.split(":")
        exclusion = ""
        if exclude and text == exclude[0]:
            g, a = exclude[1].split(":")[:2]
            exclusion = (f"<exclusions><exclusion><groupId>{g}</groupId>"
                         f"<artifactId>{a}</artifactId></exclusion></exclusions>")
        deps.append(f"<dependency><groupId>{group}</groupId><artifactId>{artifact}"
                    f"</artifactId><version>{version}</version>{exclusion}</dependency>")
    return ("<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0"
            f"</modelVersion><groupId>deltasink.cache</groupId><artifactId>{name}</artifactId>"
            f"<version>1</version><dependencies>{''.join(deps)}</dependencies></project>\n")


def read_classpath(file: Path) -> list[Path]:
    """The jars of a classpath file ``mvn`` wrote (``os.pathsep``-separated)."""
    return [Path(p) for p in file.read_text().strip().split(os.pathsep) if p]


def build_classpath(folder: Path, name: str, coordinates: Iterable[str],
                    exclude: tuple[str, str] | None, repository: Path) -> list[Path]:
    """Resolve ``coordinates`` into ``repository`` with ``mvn``; write and return the classpath.

    Writes ``folder/pom.xml`` and ``folder/classpath.txt``.

    Raises:
        EnvironmentSetupError: no ``mvn``, or it failed (the last lines it printed are quoted).
    """
    (folder / "pom.xml").write_text(pom(name, coordinates, exclude))
    out = folder / "classpath.txt"
    mvn = shutil.which("mvn")
    if not mvn:
        raise EnvironmentSetupError("Maven (`mvn`) is needed once to fetch JVM jars; install it "
                                    "(`apt-get install maven`) and run `make install`.")
    cmd = [mvn, "-q", "-B", "-f", str(folder / "pom.xml"), "dependency:build-classpath",
           f"-Dmdep.outputFile={out}", f"-Dmaven.repo.local={repository}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-6:])
        raise EnvironmentSetupError(
            f"could not fetch the JVM artifacts for {name} from Maven Central, and they are not "
            f"cached in {repository}. Check network access to Maven Central (or a mirror in "
            f"~/.m2/settings.xml) and run `make install` again.\nmvn said:\n{tail}")
    return read_classpath(out)
