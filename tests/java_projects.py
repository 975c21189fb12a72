"""The Java projects the tests here share (tests/language_kit.py, tests/test_java_*.py): a
JUnit 5 project with one wrong comparison (`Range.contains` leaves out its upper bound), and a
JUnit 4 reactor of two modules whose `core` has a wrong constant that `app`'s tests meet too.
Their POMs are the same in every test that uses them, so that one set-up image serves them all
(the set-up image's key is the POMs' content)."""

from __future__ import annotations

POM = """\
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>com.example</groupId>
  <artifactId>range</artifactId>
  <version>1.0</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>org.junit.jupiter</groupId>
      <artifactId>junit-jupiter</artifactId>
      <version>5.10.2</version>
      <scope>test</scope>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <artifactId>maven-compiler-plugin</artifactId>
        <version>3.11.0</version>
      </plugin>
      <plugin>
        <artifactId>maven-surefire-plugin</artifactId>
        <version>3.2.5</version>
      </plugin>
    </plugins>
  </build>
</project>
"""

RANGE = """\
package com.example;

/** A closed range of ints. */
public final class Range {
    private final int low;
    private final int high;

    public Range(int low, int high) {
        this.low = low;
        this.high = high;
    }

    public boolean contains(int value) {
        return value >= low && value < high;
    }

    public int length() {
        return high - low + 1;
    }
}
"""

RANGE_TEST = """\
package com.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertFalse;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class RangeTest {
    @Test
    void includesLowerBound() {
        assertTrue(new Range(1, 5).contains(1));
    }

    @Test
    void includesUpperBound() {
        assertTrue(new Range(1, 5).contains(5));
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 5})
    void includesInside(int value) {
        assertTrue(new Range(1, 5).contains(value));
    }

    @Nested
    class Outside {
        @Test
        void excludesAbove() {
            assertFalse(new Range(1, 5).contains(6));
        }
    }

    @Test
    void length() {
        assertEquals(5, new Range(1, 5).length());
    }
}
"""

#: The JUnit 5 project: `worker fix` recognises it by pom.xml and sets it up with no flag.
PROJECT = {
    "pom.xml": POM,
    "src/main/java/com/example/Range.java": RANGE,
    "src/test/java/com/example/RangeTest.java": RANGE_TEST,
}
#: Its baseline's failing tests, by id: the upper bound, and the parameterised case of it.
FAILING = [
    ".::com.example.RangeTest#includesInside(int)[2]",
    ".::com.example.RangeTest#includesUpperBound",
]
GOOD_PATCH = (
    "--- a/src/main/java/com/example/Range.java\n"
    "+++ b/src/main/java/com/example/Range.java\n"
    "@@ -13,3 +13,3 @@\n"
    "     public boolean contains(int value) {\n"
    "-        return value >= low && value < high;\n"
    "+        return value >= low && value <= high;\n"
    "     }\n"
)
#: A project whose test dependency no repository has (Maven Central answers 404).
BROKEN = {
    **PROJECT,
    "pom.xml": POM.replace(
        "  </dependencies>",
        "    <dependency>\n      <groupId>org.example.worker.missing</groupId>\n"
        "      <artifactId>nowhere</artifactId>\n      <version>9.9.9</version>\n"
        "      <scope>test</scope>\n    </dependency>\n  </dependencies>",
    ),
}

REACTOR_POM = """\
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>org.acme</groupId>
  <artifactId>parent</artifactId>
  <version>1.0</version>
  <packaging>pom</packaging>
  <modules>
    <module>core</module>
    <module>app</module>
  </modules>
  <properties>
    <maven.compiler.source>11</maven.compiler.source>
    <maven.compiler.target>11</maven.compiler.target>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>junit</groupId>
      <artifactId>junit</artifactId>
      <version>4.13.2</version>
      <scope>test</scope>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <artifactId>maven-compiler-plugin</artifactId>
        <version>3.11.0</version>
      </plugin>
      <plugin>
        <artifactId>maven-surefire-plugin</artifactId>
        <version>3.2.5</version>
      </plugin>
    </plugins>
  </build>
</project>
"""

#: The JUnit 4 reactor: core (Temperature) and app (Report, which uses core).
REACTOR = {
    "pom.xml": REACTOR_POM,
    "core/pom.xml": """\
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <parent>
    <groupId>org.acme</groupId>
    <artifactId>parent</artifactId>
    <version>1.0</version>
  </parent>
  <artifactId>core</artifactId>

</project>
""",
    "app/pom.xml": """\
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <parent>
    <groupId>org.acme</groupId>
    <artifactId>parent</artifactId>
    <version>1.0</version>
  </parent>
  <artifactId>app</artifactId>
  <dependencies><dependency><groupId>org.acme</groupId><artifactId>core</artifactId><version>1.0</version></dependency></dependencies>
</project>
""",
    "core/src/main/java/org/acme/core/Temperature.java": """\
package org.acme.core;

public final class Temperature {
    private Temperature() {}

    public static double toFahrenheit(double celsius) {
        return celsius * 9 / 5 + 23;
    }
}
""",
    "core/src/test/java/org/acme/core/TemperatureTest.java": """\
package org.acme.core;

import static org.junit.Assert.assertEquals;

import org.junit.Test;

public class TemperatureTest {
    @Test
    public void freezing() {
        assertEquals(32.0, Temperature.toFahrenheit(0), 1e-9);
    }

    @Test
    public void boiling() {
        assertEquals(212.0, Temperature.toFahrenheit(100), 1e-9);
    }
}
""",
    "app/src/main/java/org/acme/app/Report.java": """\
package org.acme.app;

import org.acme.core.Temperature;

public final class Report {
    private Report() {}

    public static String line(String city, double celsius) {
        return city + ": " + Math.round(Temperature.toFahrenheit(celsius)) + "F";
    }
}
""",
    "app/src/test/java/org/acme/app/ReportTest.java": """\
package org.acme.app;

import static org.junit.Assert.assertEquals;

import org.junit.Test;

public class ReportTest {
    @Test
    public void namesTheCity() {
        assertEquals("Oslo: 50F", Report.line("Oslo", 10));
    }

    @Test
    public void startsWithTheCity() {
        assertEquals(true, Report.line("Rome", 20).startsWith("Rome: "));
    }
}
""",
}
REACTOR_FAILING = [
    "app::org.acme.app.ReportTest#namesTheCity",
    "core::org.acme.core.TemperatureTest#boiling",
    "core::org.acme.core.TemperatureTest#freezing",
]
REACTOR_PATCH = (
    "--- a/core/src/main/java/org/acme/core/Temperature.java\n"
    "+++ b/core/src/main/java/org/acme/core/Temperature.java\n"
    "@@ -6,3 +6,3 @@\n"
    "     public static double toFahrenheit(double celsius) {\n"
    "-        return celsius * 9 / 5 + 23;\n"
    "+        return celsius * 9 / 5 + 32;\n"
    "     }\n"
)

RANGE_IT = """\
package com.example;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class RangeIT {
    @Test
    void containsItsWholeSpan() {
        Range range = new Range(0, 3);
        for (int i = 0; i <= 3; i++) {
            assertTrue(range.contains(i), "contains " + i);
        }
    }
}
"""
#: The JUnit 5 project with an integration test run by maven-failsafe-plugin (bound in its
#: POM), which CI runs with `verify`: the IT fails from the same wrong comparison.
FAILSAFE_PROJECT = {
    **PROJECT,
    "pom.xml": POM.replace(
        "    </plugins>",
        "      <plugin>\n        <artifactId>maven-failsafe-plugin</artifactId>\n"
        "        <version>3.2.5</version>\n        <executions>\n          <execution>\n"
        "            <goals><goal>integration-test</goal><goal>verify</goal></goals>\n"
        "          </execution>\n        </executions>\n      </plugin>\n    </plugins>",
    ),
    "src/test/java/com/example/RangeIT.java": RANGE_IT,
    ".github/workflows/ci.yml": (
        "name: ci\non: [push]\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n"
        "      - run: mvn -B -ntp package -DskipTests\n"
        "      - run: mvn -B -ntp verify --file pom.xml\n"
    ),
}
FAILSAFE_FAILING = sorted([*FAILING, ".::com.example.RangeIT#containsItsWholeSpan"])
