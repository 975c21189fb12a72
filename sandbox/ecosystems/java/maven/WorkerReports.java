package worker.maven;

import java.io.File;
import javax.inject.Named;
import javax.inject.Singleton;
import org.apache.maven.AbstractMavenLifecycleParticipant;
import org.apache.maven.execution.MavenSession;
import org.apache.maven.model.Plugin;
import org.apache.maven.model.PluginExecution;
import org.apache.maven.project.MavenProject;
import org.codehaus.plexus.util.xml.Xpp3Dom;

/**
 * Where Surefire and Failsafe write their XML reports in a worker run: under the folder the
 * user property worker.reports names (random per run), one folder per module and plugin
 * (`core/surefire-reports`, as Maven names them: Surefire before 2.19 keeps its forked VM's
 * files in the folder `surefire` beside its reports folder and deletes it after the run, so a
 * reports folder of that name was emptied), whatever the POM says; and testFailureIgnore, so that a failing module's tests do not keep
 * the others from running (the harness reads the outcome from the reports, and says the run
 * failed itself). Nothing else of the build is changed; without the property, nothing at all.
 * Loaded with -Dmaven.ext.class.path (sandbox/ecosystems/java/image.py builds the jar).
 */
@Named("worker-reports")
@Singleton
public class WorkerReports extends AbstractMavenLifecycleParticipant {
    @Override
    public void afterProjectsRead(MavenSession session) {
        String reports = session.getUserProperties().getProperty("worker.reports");
        if (reports == null || reports.isEmpty()) {
            return;
        }
        File top = session.getRequest().getMultiModuleProjectDirectory();
        if (top == null) {
            top = session.getTopLevelProject().getBasedir();
        }
        for (MavenProject project : session.getProjects()) {
            String module = top.toPath().toAbsolutePath().normalize()
                .relativize(project.getBasedir().toPath().toAbsolutePath().normalize()).toString();
            if (module.isEmpty()) {
                module = ".";
            }
            for (Plugin plugin : project.getBuildPlugins()) {
                String kind = kind(plugin);
                if (kind == null) {
                    continue;
                }
                String dir = new File(new File(reports, module), kind + "-reports").getPath();
                plugin.setConfiguration(withDirectory((Xpp3Dom) plugin.getConfiguration(), dir));
                for (PluginExecution execution : plugin.getExecutions()) {
                    execution.setConfiguration(
                        withDirectory((Xpp3Dom) execution.getConfiguration(), dir));
                }
            }
        }
    }

    private static String kind(Plugin plugin) {
        if (!"org.apache.maven.plugins".equals(plugin.getGroupId())) {
            return null;
        }
        if ("maven-surefire-plugin".equals(plugin.getArtifactId())) {
            return "surefire";
        }
        if ("maven-failsafe-plugin".equals(plugin.getArtifactId())) {
            return "failsafe";
        }
        return null;
    }

    private static void set(Xpp3Dom config, String name, String value) {
        Xpp3Dom child = config.getChild(name);
        if (child == null) {
            child = new Xpp3Dom(name);
            config.addChild(child);
        }
        child.setValue(value);
    }

    private static Xpp3Dom withDirectory(Xpp3Dom configuration, String dir) {
        Xpp3Dom config = configuration == null ? new Xpp3Dom("configuration") : configuration;
        set(config, "reportsDirectory", dir);
        set(config, "testFailureIgnore", "true");
        return config;
    }
}
