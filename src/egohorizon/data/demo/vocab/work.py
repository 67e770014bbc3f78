"""Work and study at a desk: coding, writing, reading papers, e-mail, meetings, design work, lunch.

Slots such as ``{project}``, ``{feature}`` or ``{section}`` come from the persona's current phase of
work (``personas.py``), so the same person keeps working on the same thing for days at a time.
"""

from egohorizon.data.demo.grammar import a, activity, opt, pick, rep, step, task

DESK = "{desk}"

# --- planning and e-mail ----------------------------------------------------------------------
OPEN_LAPTOP = a("open my laptop and log in|unlock my laptop|open the laptop at my desk", "laptop desk", 8, 20,
                screen="laptop:login")
READ_MAIL = a("read an email from {colleague}|open {colleague}'s email|read through an email from {colleague}",
              "laptop", 15, 50, screen="laptop:mail")
REPLY_MAIL = a("type a reply to {colleague}|answer {colleague}'s email|write back to {colleague}",
               "laptop", 30, 90, screen="laptop:mail")
ARCHIVE = a("archive a few newsletters|delete spam emails|clean up my inbox", "laptop", 8, 25, screen="laptop:mail")
step("handle_email", "answer an email from {colleague}|deal with {colleague}'s email|reply to {colleague}",
     [READ_MAIL, REPLY_MAIL, opt(ARCHIVE, 0.4)], place=DESK, slots={"colleague": "@colleague"})
CALENDAR = a("look at my calendar for today|check today's meetings in the calendar|check my schedule",
             "laptop", 10, 25, screen="laptop:calendar")
TODO = a("write my to-do list in my notebook|jot down today's tasks|make a list of things to do", "notebook pen", 30, 80)
step("plan_day", "plan my day|make a plan for today|sort out what to do today", [CALENDAR, TODO], place=DESK)
step("open_up", "open my laptop and check the inbox|start up my laptop|get set up at my desk",
     [OPEN_LAPTOP, READ_MAIL, opt(ARCHIVE, 0.5)], place=DESK, slots={"colleague": "@colleague"})
task("inbox", "go through my inbox|catch up on email|answer my emails",
     ["open_up", rep("handle_email", 1, 3)], place=DESK)
task("plan_tasks", "plan the day's work|work out my priorities for today|plan what to do today",
     ["plan_day"], place=DESK)
activity("start_workday", "check emails and plan the day|start the work day|get organised for the day",
         ["inbox", "plan_tasks"], place=DESK)

# --- coding -------------------------------------------------------------------------------------
CODE = a("type code for {feature} in the editor|write the function for {feature}|code up {feature}",
         "laptop", 40, 120, screen="laptop:code")
READ_CODE = a("read through the code in {module}|scroll through {module}|look over {module}", "laptop", 20, 60,
              screen="laptop:code")
DOCS = a("look up the {library} documentation|search the {library} docs in the browser|"
         "read the {library} docs", "laptop", 20, 70, screen="laptop:docs")
TESTS = a("run the tests in the terminal|run the test suite|start the tests", "laptop", 15, 50, screen="laptop:tests")
WAIT_TESTS = a("wait for the tests to finish|watch the test output scroll by|wait for the test run", "laptop", 10, 40,
               screen="laptop:tests")
ERROR = a("read the error message in the terminal|look at the failing test output|read the stack trace",
          "laptop", 10, 35, screen="laptop:tests")
FIX = a("fix the bug in {module}|change a line to fix the error|patch the failing function", "laptop", 30, 90,
        screen="laptop:code")
PRINT = a("add a print statement to debug|add some logging to see what happens|put in a breakpoint",
          "laptop", 15, 40, screen="laptop:code")
COMMIT = a("commit my changes with git|write a commit message|commit the code", "laptop", 15, 40,
           screen="laptop:git")
PUSH = a("push the branch and open a pull request|push my commits|open a pull request", "laptop", 20, 50,
         screen="laptop:browser")
step("write_code", "write code for {feature}|implement {feature}|program {feature}",
     [opt(READ_CODE, 0.5), CODE, opt(DOCS, 0.4), CODE], place=DESK)
step("run_tests", "run the tests|test my changes|check that the tests pass", [TESTS, WAIT_TESTS, opt(ERROR, 0.5)],
     place=DESK)
step("debug", "debug {bug}|track down {bug}|figure out {bug}", [ERROR, PRINT, TESTS, FIX, opt(TESTS, 0.6)],
     place=DESK)
step("commit_push", "commit and push my changes|save my work to git|push my code",
     [COMMIT, opt(PUSH, 0.6)], place=DESK)
task("implement_feature", "implement {feature} in {project}|add {feature} to {project}|build {feature}",
     [rep("write_code", 1, 3), "run_tests", opt("debug", 0.5), opt("commit_push", 0.6)], place=DESK)
task("fix_bug", "fix {bug} in {project}|hunt down {bug}|debug {bug} in {project}",
     ["debug", opt("debug", 0.4), opt("commit_push", 0.7)], place=DESK)
activity("coding", "work on the code of {project}|code on {project}|program {project}",
         [rep(pick("implement_feature", "fix_bug", weights=(2, 1)), 2, 4)], place=DESK)

# --- experiments -----------------------------------------------------------------------------------
SUBMIT = a("submit training jobs to the cluster|launch experiments on the cluster|start a sweep of runs",
           "laptop", 20, 60, screen="laptop:cluster")
CONFIG = a("edit the experiment config|change the learning rate in the config|set up the config files",
           "laptop", 20, 60, screen="laptop:code")
CURVES = a("check the training curves|look at the loss plots|compare the runs on the dashboard", "laptop", 20, 70,
           screen="laptop:plots")
PLOT = a("plot the results in a notebook|make a plot of the results|draw a chart of the scores", "laptop", 40, 110,
         screen="laptop:plots")
TABLE = a("fill in the results table|copy the numbers into a table|update the results spreadsheet", "laptop",
          30, 80, screen="laptop:doc")
step("launch_runs", "launch experiments for {project}|start new training runs|set up and launch experiments",
     [CONFIG, SUBMIT], place=DESK)
step("monitor_runs", "check on the running experiments|monitor the training runs|look at how the runs are doing",
     [CURVES, opt(CURVES, 0.5)], place=DESK)
step("analyse_results", "analyse the results|go through the experiment results|make sense of the numbers",
     [PLOT, TABLE, opt(PLOT, 0.4)], place=DESK)
task("run_experiments", "run experiments for {project}|run a round of experiments|test ideas on the cluster",
     ["launch_runs", opt("monitor_runs", 0.7), "analyse_results"], place=DESK)
activity("experiments", "run experiments on the cluster|work on experiments for {project}|run and analyse experiments",
         [rep("run_experiments", 1, 3)], place=DESK)

# --- writing -----------------------------------------------------------------------------------
WRITE = a("write a paragraph about {topic}|type a few sentences about {topic}|draft text about {topic}",
          "laptop", 50, 130, screen="laptop:doc")
REREAD = a("reread what I wrote|read over the last paragraph|reread the draft", "laptop", 20, 50, screen="laptop:doc")
EDIT = a("edit a sentence in the {section}|rewrite an awkward sentence|cut a sentence from the draft", "laptop",
         15, 45, screen="laptop:doc")
CITE = a("add a citation|look up a reference to cite|insert a reference", "laptop", 15, 40, screen="laptop:browser")
step("draft_paragraph", "write a paragraph of the {section}|draft part of the {section}|write about {topic}",
     [WRITE, opt(REREAD, 0.6), opt(CITE, 0.4), opt(EDIT, 0.5)], place=DESK)
step("revise_text", "revise the {section}|edit the draft of the {section}|polish the {section}",
     [REREAD, EDIT, EDIT, opt(REREAD, 0.5)], place=DESK)
task("write_section", "write the {section} of the paper|draft the {section}|work on the {section}",
     [rep("draft_paragraph", 2, 4), opt("revise_text", 0.5)], place=DESK)
task("make_figure", "make a figure for the paper|prepare a figure for the {section}|create a plot for the paper",
     ["analyse_results"], place=DESK)
activity("writing", "write the paper on {project}|work on my paper|write up {project}",
         [rep(pick("write_section", "make_figure", weights=(3, 1)), 2, 3)], place=DESK)

# --- reading papers -----------------------------------------------------------------------------
SEARCH = a("search for papers on {topic}|look for related work on {topic}|search the web for {topic}",
           "laptop", 20, 60, screen="laptop:browser")
ABSTRACT = a("read the abstract of a paper on {topic}|skim a paper about {topic}|read the introduction",
             "laptop", 30, 90, screen="laptop:paper")
METHOD = a("read the method section|study the equations in the paper|read the experiments section", "laptop",
           60, 130, screen="laptop:paper")
NOTES = a("write notes on the paper in my notebook|jot down the key idea|note the paper's main results",
          "notebook pen", 30, 80)
step("find_papers", "look for papers on {topic}|search the literature on {topic}|find related work",
     [SEARCH, opt(SEARCH, 0.4)], place=DESK)
step("read_paper", "read a paper on {topic}|study a paper about {topic}|go through a paper on {topic}",
     [ABSTRACT, METHOD, opt(METHOD, 0.5), NOTES], place=DESK)
task("literature", "read up on {topic}|read papers about {topic}|study the literature on {topic}",
     [opt("find_papers", 0.7), rep("read_paper", 1, 2)], place=DESK)
activity("reading", "read papers for {project}|catch up on reading|read related work",
         [rep("literature", 1, 3)], place=DESK)

# --- meetings ------------------------------------------------------------------------------------
GOTO_ROOM = a("walk to the meeting room|go to the meeting room|head over to the meeting room", "door", 20, 60,
              place="corridor")
SIT = a("sit down and open my laptop|take a seat at the table|sit down with my notebook", "chair laptop", 8, 20)
PRESENT = a("present my latest results to the group|show my slides about {project}|explain my results",
            "laptop projector", 60, 130, speech="meeting", screen="laptop:slides")
QUESTIONS = a("answer questions about my results|discuss a question from {colleague}|reply to comments",
              "projector", 40, 100, speech="meeting")
LISTEN = a("listen to {colleague}'s update|listen to {colleague} present|follow {colleague}'s talk",
           "projector", 60, 130, speech="meeting")
TAKE_NOTES = a("take notes during the meeting|write down action items|note what {colleague} suggested",
               "notebook pen", 20, 60)
DISCUSS = a("discuss next steps with {supervisor}|talk through the plan with {supervisor}|"
            "agree on what to try next with {supervisor}", "notebook", 50, 120, speech="meeting")
step("join_meeting", "get to the meeting|join the meeting|settle in for the meeting", [GOTO_ROOM, SIT],
     place="meeting room")
step("present", "present my progress|give my update|show my results to the group",
     [PRESENT, QUESTIONS, opt(QUESTIONS, 0.5)], place="meeting room")
step("hear_updates", "listen to the others' updates|hear what the others did|follow the updates",
     [LISTEN, TAKE_NOTES, opt(LISTEN, 0.6)], place="meeting room", slots={"colleague": "@colleague"})
step("next_steps", "plan next steps with {supervisor}|agree on next steps|discuss what to do next",
     [DISCUSS, TAKE_NOTES], place="meeting room")
task("meeting_start", "go to the group meeting|join the weekly meeting|get ready for the meeting",
     ["join_meeting", "hear_updates"], place="meeting room")
task("meeting_mine", "present my work at the meeting|give my update at the meeting|present {project}",
     ["present", opt("next_steps", 0.6)], place="meeting room")
task("meeting_rest", "listen to the rest of the meeting|hear the remaining updates|stay for the end of the meeting",
     ["hear_updates", opt("next_steps", 0.3)], place="meeting room")
activity("group_meeting", "attend the group meeting|go to the weekly lab meeting|take part in the team meeting",
         ["meeting_start", "meeting_mine", opt("meeting_rest", 0.4)], place="meeting room", interruptible=False)

# --- design work (a designer's desk) ----------------------------------------------------------------
SKETCH = a("sketch layout ideas for the {screen_name} screen|draw wireframes on paper|sketch the {screen_name} layout",
           "sketchbook pencil", 60, 130)
FIGMA = a("arrange components in Figma|move buttons around in the mockup|build the {screen_name} screen in Figma",
          "laptop", 50, 130, screen="laptop:design")
COLOURS = a("adjust the colours of the {screen_name} screen|try a different font|tweak the spacing in the mockup",
            "laptop", 30, 90, screen="laptop:design")
EXPORT = a("export the mockups|share the prototype link|export the screens as images", "laptop", 15, 40,
           screen="laptop:design")
FEEDBACK = a("read the client's feedback|go through comments on the mockup|read the review notes", "laptop", 30, 80,
             screen="laptop:mail")
INSPIRATION = a("look at reference designs for a {screen_name} screen|browse design inspiration|collect example layouts",
                "laptop", 30, 80, screen="laptop:browser")
step("sketch_ideas", "sketch ideas for the {screen_name} screen|sketch on paper|draw layout ideas",
     [INSPIRATION, SKETCH, opt(SKETCH, 0.5)], place=DESK)
step("build_mockup", "build the mockup of the {screen_name} screen|design the {screen_name} screen|work in Figma",
     [FIGMA, COLOURS, opt(FIGMA, 0.6)], place=DESK)
step("review_feedback", "go through the feedback on {project}|read the client's comments|review feedback",
     [FEEDBACK, opt(COLOURS, 0.5)], place=DESK)
SEND_LINK = a("send the prototype link to {client}|write {client} a short note with the link|mail the mockups to {client}",
              "laptop", 20, 50, screen="laptop:mail")
step("share_mockups", "export and share the mockups|send the designs to {client}|share the prototype",
     [EXPORT, SEND_LINK], place=DESK)
task("design_screen", "design the {screen_name} screen for {project}|work on the {screen_name} screen|"
     "lay out the {screen_name} screen", [opt("sketch_ideas", 0.5), rep("build_mockup", 1, 2), opt("share_mockups", 0.4)],
     place=DESK)
task("handle_feedback", "work through the feedback on {project}|revise the mockups|apply the client's comments",
     ["review_feedback", "build_mockup"], place=DESK)
activity("design_work", "design screens for {project}|work on the designs for {project}|do design work on {project}",
         [rep(pick("design_screen", "handle_feedback", weights=(3, 1)), 2, 3)], place=DESK)

JOIN_CALL = a("join the video call with {client}|open the call with {client}|dial into the call", "laptop", 10, 25,
              screen="laptop:call")
SHARE = a("share my screen and walk through the mockups|present the designs to {client}|show the prototype",
          "laptop", 60, 130, speech="meeting", screen="laptop:call")
CLIENT_TALK = a("talk about {client}'s requests|discuss changes with {client}|listen to {client}'s feedback",
                "laptop", 50, 120, speech="meeting", screen="laptop:call")
step("client_call_step", "talk with {client} on a video call|present to {client}|review the designs with {client}",
     [JOIN_CALL, SHARE, CLIENT_TALK, opt(TAKE_NOTES, 0.6)], place=DESK)
AGENDA = a("write down the points to discuss with {client}|prepare an agenda for the call|list my questions for {client}",
           "notebook pen", 30, 80)
OPEN_MOCKS = a("open the mockups to show {client}|put the prototype on screen|arrange the windows for the call", "laptop",
               15, 40, screen="laptop:design")
task("prepare_call", "prepare for the call with {client}|get ready for the client call|plan what to show {client}",
     [step("prepare_call_step", "prepare the points for the call|get the mockups ready to show|set up for the call",
           [AGENDA, OPEN_MOCKS], place=DESK)], place=DESK)
task("client_call_task", "have a call with {client}|meet {client} online|present my designs to {client}",
     ["client_call_step", opt("client_call_step", 0.3)], place=DESK)
activity("client_call", "have a video call with {client}|meet the client about {project}|call with {client}",
         ["prepare_call", "client_call_task", opt(task("call_follow_up", "follow up on the call by email|write up the call|"
                                       "send {client} a summary", ["handle_email"], place=DESK), 0.5)],
         place=DESK, interruptible=False)

# --- breaks and lunch at work -----------------------------------------------------------------------
OFFICE_COFFEE = a("make a coffee at the office machine|press the button on the coffee machine|get a coffee",
                  "coffee_machine mug", 30, 70)
SMALLTALK = a("chat with {colleague} in the kitchen|talk with {colleague} over coffee|have a chat with {colleague}",
              "mug", 40, 110, speech="colleague")
step("coffee_break_step", "get a coffee and chat with {colleague}|have a coffee with {colleague}|chat over coffee",
     [OFFICE_COFFEE, SMALLTALK, opt(SMALLTALK, 0.5)], place="office kitchen", slots={"colleague": "@colleague"})
WALK_KITCHEN = a("walk to the office kitchen|leave my desk for the kitchen|head to the coffee corner", "door", 15, 40,
                 place="corridor")
step("to_kitchen", "go to the office kitchen|leave my desk for a coffee|walk over to the kitchen",
     [WALK_KITCHEN, OFFICE_COFFEE], place="office kitchen")
task("coffee_break_task", "take a coffee break|grab a coffee with a colleague|chat with a colleague over coffee",
     ["coffee_break_step"], place="office kitchen")
task("get_office_coffee", "get a coffee in the office kitchen|make a coffee at work|fetch a coffee",
     ["to_kitchen"], place="office kitchen")
activity("coffee_break", "take a coffee break with colleagues|have a coffee break|get a coffee and chat",
         ["get_office_coffee", "coffee_break_task"], place="office kitchen")

QUEUE = a("queue at the food counter|wait in line at the canteen|line up for lunch", "tray", 40, 110)
CHOOSE = a("choose a dish at the counter|pick the vegetarian dish|take a plate of pasta", "tray plate", 10, 25)
PAY_CARD = a("pay with my card at the till|tap my card to pay|pay for my lunch", "card", 8, 15)
FIND_SEAT = a("look for a free seat|sit down with {colleague}|find a table", "tray", 15, 40)
EAT_LUNCH = a("eat my lunch|eat lunch and talk with {colleague}|have my lunch", "plate fork", 60, 130,
              speech="colleague")
TRAY_BACK = a("return my tray|put the tray on the trolley|bring the tray back", "tray", 10, 25)
step("get_food", "get food at the canteen|buy lunch at the counter|get my lunch", [QUEUE, CHOOSE, PAY_CARD],
     place="canteen")
step("eat_with_colleagues", "eat lunch with {colleague}|have lunch with colleagues|eat together with {colleague}",
     [FIND_SEAT, EAT_LUNCH, rep(EAT_LUNCH, 1, 3), TRAY_BACK], place="canteen", slots={"colleague": "@colleague"})
task("canteen_lunch_task", "have lunch at the canteen|eat at the canteen|get lunch at the canteen",
     ["get_food", "eat_with_colleagues"], place="canteen")
activity("canteen_lunch", "have lunch at the canteen with colleagues|eat lunch at the canteen|go for lunch",
         ["canteen_lunch_task", opt("coffee_break_task", 0.3)], place="canteen")

HEAT_LUNCH = a("heat up my leftovers in the microwave|warm my lunch in the microwave|microwave the leftovers",
               "microwave lunch_box", 60, 150)
EAT_DESK = a("eat my lunch at my desk|eat leftovers while reading|have a few bites of my lunch", "lunch_box fork",
             60, 130)
step("heat_lunch", "heat up my lunch|warm up leftovers|get my lunch ready", [HEAT_LUNCH], place="kitchen")
step("eat_at_desk", "eat at my desk|have lunch alone|eat the leftovers", [EAT_DESK, rep(EAT_DESK, 1, 2)],
     place=DESK)
task("packed_lunch", "eat my packed lunch|have leftovers for lunch|eat lunch at my desk",
     ["heat_lunch", "eat_at_desk", opt("browse_feed", 0.6)], place=DESK)
activity("desk_lunch", "have lunch at my desk|eat leftovers for lunch|eat a quick lunch",
         ["packed_lunch", opt("phone_break", 0.5)], place=DESK)
