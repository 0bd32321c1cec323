// The roofline course's JupyterLab 4 extension, written by hand: no build step, no dependencies.
// JupyterLab loads a prebuilt ("federated") extension by running this script, then calling
// _JUPYTERLAB[name].init(shareScope) and get("./extension"), a factory whose result's `default`
// is the plugin (package.json's jupyterlab._build names this file and "./extension").
(function () {
  "use strict";
  var NAME = "roofline-course";

  // nbgrader's Assignment List link "(view feedback)" runs filebrowser:go-to-path on the
  // submission's feedback page (course_hub.feedback_link makes it the page, not its folder):
  // that only moves the file browser and selects the page. We open the page once the browser
  // has moved, rather than patching nbgrader's JavaScript. Only a page of nbgrader's feedback
  // layout, <assignment>/feedback/<timestamp>/<notebook>.html, is opened; every other
  // go-to-path is left alone.
  var FEEDBACK_PAGE = /(^|\/)feedback\/[^/]+\/[^/]+\.html$/;

  var openFeedback = {
    id: NAME + ":open-feedback",
    description: "Opens a feedback page in the HTML viewer when nbgrader's \"(view feedback)\" goes to it.",
    autoStart: true,
    activate: function (app) {
      app.commands.commandExecuted.connect(function (_, executed) {
        var path = executed.args && executed.args.path;
        if (executed.id !== "filebrowser:go-to-path" || typeof path !== "string" || !FEEDBACK_PAGE.test(path)) {
          return;
        }
        executed.result
          .then(function () {
            return app.commands.execute("docmanager:open", { path: path, factory: "HTML Viewer" });
          })
          .catch(function (reason) {
            console.warn(NAME + ": could not open the feedback page " + path, reason);
          });
      });
    }
  };

  var container = {
    init: function () {},   // it shares no modules and borrows none
    get: function (module) {
      if (module !== "./extension") {
        return Promise.reject(new Error(NAME + ' has no module "' + module + '"'));
      }
      return Promise.resolve(function () {
        return { __esModule: true, default: [openFeedback] };
      });
    }
  };
  (window._JUPYTERLAB = window._JUPYTERLAB || {})[NAME] = container;
})();
