"""Free time: music practice, sport, series and books, games, friends, the dog."""

from egohorizon.data.demo.grammar import a, activity, anyorder, opt, pick, rep, step, task

# --- guitar ----------------------------------------------------------------------------------------
GUITAR_GET = a("take my guitar off the stand|pick up my guitar|get the guitar out of its case", "guitar", 8, 20)
TUNE = a("tune the guitar|tune the strings with the tuner|check the tuning", "guitar tuner", 30, 80)
SCALES = a("play scales to warm up|warm up my fingers with scales|play a few chord changes", "guitar", 60, 130)
TABS = a("open the tabs for {song} on my laptop|look up the chords for {song}|read the tab for {song}",
         "laptop guitar", 15, 40, screen="laptop:tabs")
PLAY_PART = a("play the intro of {song}|practise the chorus of {song}|play through the verse of {song}",
              "guitar", 60, 130)
DRILL = a("repeat a difficult passage slowly|practise the tricky chord change|loop the hard bar again",
          "guitar", 40, 100)
TUTORIAL = a("watch a tutorial on how to play {song}|watch a lesson video for {song}|follow a video lesson",
             "laptop guitar", 60, 130, screen="laptop:video")
GUITAR_AWAY = a("put the guitar back on its stand|put my guitar away|hang the guitar back up", "guitar", 8, 20)
step("warm_up_guitar", "tune up and play scales|tune and warm up|get the guitar ready",
     [GUITAR_GET, TUNE, SCALES], place="living room")
step("learn_song_step", "learn a part of {song}|work on {song}|practise {song}",
     [opt(TABS, 0.5), PLAY_PART, DRILL, opt(PLAY_PART, 0.6)], place="living room")
step("watch_lesson", "follow a guitar lesson for {song}|learn {song} from a video|watch a lesson on {song}",
     [TUTORIAL, PLAY_PART], place="living room")
task("guitar_warmup", "warm up on the guitar|tune my guitar and play scales|get warmed up",
     ["warm_up_guitar"], place="living room")
task("learn_song", "learn to play {song}|practise {song} on the guitar|work on playing {song}",
     [rep(pick("learn_song_step", "watch_lesson", weights=(3, 1)), 2, 3)], place="living room")
task("guitar_finish", "play {song} through and put the guitar away|finish practising|wrap up practice",
     [step("play_through", "play {song} from start to end|play the whole of {song}|run through {song}",
           [PLAY_PART, PLAY_PART, GUITAR_AWAY], place="living room")], place="living room")
activity("guitar", "practise guitar|play guitar for a while|have a guitar practice session",
         ["guitar_warmup", "learn_song", opt("guitar_finish", 0.7)], place="living room")

# --- piano -------------------------------------------------------------------------------------------
PIANO_OPEN = a("open the piano lid and sit down|sit down at the keyboard|switch on the digital piano", "piano", 8, 20)
ARPEGGIO = a("play arpeggios to warm up|practise scales on the piano|warm up my hands on the keys", "piano", 60, 130)
SHEET = a("put the sheet music for {piece} on the stand|open the score of {piece}|turn the page of the score",
          "sheet_music piano", 8, 20)
PIANO_PART = a("play the first page of {piece}|practise the left hand of {piece}|play a section of {piece}",
               "piano sheet_music", 60, 130)
METRONOME = a("set the metronome slower|switch on the metronome|adjust the metronome", "metronome", 5, 15)
step("piano_warmup_step", "warm up on the piano|play scales on the piano|get my hands warm",
     [PIANO_OPEN, ARPEGGIO], place="living room")
step("piano_piece_step", "practise a passage of {piece}|work on {piece}|play {piece} slowly",
     [SHEET, opt(METRONOME, 0.5), PIANO_PART, PIANO_PART], place="living room")
SIGHT = a("sight-read a simple piece|play an easy piece from the book|read through a new study", "piano sheet_music",
          60, 120)
step("sight_reading", "sight-read something new|play an easy study|read through a simple piece",
     [SHEET, SIGHT, opt(SIGHT, 0.5)], place="living room")
task("piano_warmup", "warm up at the piano|start practice with scales|do my warm-up",
     ["piano_warmup_step", opt("sight_reading", 0.7)], place="living room")
task("piano_piece", "practise {piece}|work on {piece} on the piano|learn {piece}",
     [rep("piano_piece_step", 2, 3)], place="living room")
activity("piano", "practise the piano|play piano for a while|have a piano practice session",
         ["piano_warmup", "piano_piece"], place="living room")

# --- running ------------------------------------------------------------------------------------------
RUN_CLOTHES = a("put on my running shoes|lace up my running shoes|change into running clothes", "running_shoes", 30, 90)
WATCH_START = a("start the run on my watch|start the running app|start tracking the run", "watch", 5, 12,
                screen="phone:run")
JOG = a("jog along the river path|run along the river|keep a steady pace along the path", "", 90, 180,
        place="riverside path")
CROSS = a("wait at the traffic light|cross the road at the lights|slow down at the crossing", "traffic_light", 15, 45,
          place="street")
PACE = a("check my pace on my watch|look at my watch|check how far I have run", "watch", 3, 8, screen="phone:run")
STRETCH_LEGS = a("stretch my legs|stretch my calves against a wall|do some stretches", "", 30, 80)
step("start_run", "get ready for a run|put on running gear|get set to run", [RUN_CLOTHES, WATCH_START],
     place="hallway")
step("run_leg", "run a stretch by the river|jog by the river|run a stretch along the water",
     [JOG, opt(PACE, 0.6), JOG, opt(CROSS, 0.3)], place="riverside path", interruptible=False)
step("cool_down", "cool down and stretch|stretch after the run|do a cool-down", [STRETCH_LEGS, STRETCH_LEGS],
     place="park")
task("get_out_running", "get ready and head out for the run|start my run|set off running",
     ["start_run", "run_leg"], place="riverside path")
task("run_loop", "run my usual loop|run the river loop|keep running", [rep("run_leg", 2, 4)], place="riverside path")
task("after_run", "cool down after running|stretch after my run|finish the run", ["cool_down"], place="park")
activity("running", "go for a run|run along the river|do my evening run",
         ["get_out_running", "run_loop", "after_run"], place="riverside path", interruptible=False)

# --- climbing gym -------------------------------------------------------------------------------------
HARNESS = a("put on my harness and climbing shoes|step into the harness|change into climbing shoes",
            "harness climbing_shoes", 40, 100)
CHALK = a("chalk up my hands|dip my hands in the chalk bag", "chalk_bag", 4, 10)
TIE_IN = a("tie in to the rope|check {friend}'s knot|double-check the knot", "rope", 15, 40, speech="climb")
CLIMB = a("climb the {grade} route on the left wall|climb a route on the overhang|climb the orange route",
          "climbing_wall", 60, 150)
BELAY = a("belay {friend} on their route|hold the rope for {friend}|lower {friend} down", "rope", 60, 150,
          speech="climb")
REST = a("rest on the bench and talk with {friend}|take a break with {friend}|drink water between routes",
         "water_bottle", 40, 120, speech="chat")
step("gear_up", "get my climbing gear on|gear up|get ready to climb", [HARNESS, CHALK], place="climbing gym")
step("climb_route", "climb a route|lead a route|climb the {grade} route", [TIE_IN, CHALK, CLIMB],
     place="climbing gym", interruptible=False)
step("belay_friend", "belay {friend}|take turns belaying {friend}|take over belaying {friend}", [BELAY, opt(BELAY, 0.4)],
     place="climbing gym", interruptible=False)
task("climb_warmup", "warm up on easy routes|gear up and warm up|start with easy climbs",
     ["gear_up", "climb_route"], place="climbing gym")
task("climb_session", "climb routes with {friend}|take turns climbing with {friend}|climb with {friend}",
     [rep(anyorder("climb_route", "belay_friend"), 1, 2), step("rest_climb", "take a break between climbs|"
      "rest and chat|catch my breath", [REST, opt(REST, 0.4)], place="climbing gym")], place="climbing gym")
activity("climbing", "go climbing with {friend}|climb at the gym with {friend}|have a climbing session",
         ["climb_warmup", rep("climb_session", 1, 2)], place="climbing gym", slots={"grade": ("6a", "6b", "5c")})

# --- yoga -------------------------------------------------------------------------------------------
MAT = a("roll out my yoga mat|lay the mat on the floor|put the mat down", "yoga_mat", 8, 20)
YOGA_VIDEO = a("start a yoga video on my laptop|choose a yoga class online|put on the yoga video", "laptop yoga_mat",
               10, 30, screen="laptop:video")
POSE = a("hold downward dog|move through a sun salutation|hold the warrior pose|stretch in child's pose", "yoga_mat",
         40, 110)
step("yoga_setup", "set up for yoga|get the mat and video ready|prepare for yoga", [MAT, YOGA_VIDEO],
     place="living room")
step("yoga_flow", "do a yoga flow|move through the poses|practise a sequence of poses", [POSE, POSE, opt(POSE, 0.6)],
     place="living room", interruptible=False)
task("yoga_start", "set up for a yoga session|get ready for yoga|start my yoga practice", ["yoga_setup", "yoga_flow"],
     place="living room")
task("yoga_main", "do the main yoga sequence|work through the yoga class|keep going with the yoga",
     [rep("yoga_flow", 2, 3)], place="living room")
activity("yoga", "do a yoga session at home|practise yoga|follow a yoga class", ["yoga_start", "yoga_main"],
         place="living room", interruptible=False)

# --- series, books, games ----------------------------------------------------------------------------
SOFA = a("sit down on the sofa with my laptop|get comfortable on the sofa|put the laptop on my lap", "laptop sofa",
         8, 20)
PICK_EP = a("pick the next episode of {series}|find my place in {series}|skip the intro of {series}", "laptop", 10, 30,
            screen="laptop:video")
WATCH = a("watch {series}|watch a scene of {series}|keep watching {series}", "laptop", 90, 180, screen="laptop:video")
SNACK = a("get a snack from the kitchen|grab some crisps|get a glass of juice", "snack", 30, 70, place="kitchen")
step("start_episode", "put on an episode of {series}|start watching {series}|choose what to watch",
     [SOFA, PICK_EP], place="living room")
step("watch_scenes", "watch part of the episode|watch a stretch of {series}|keep watching the episode", [WATCH, WATCH, opt(WATCH, 0.5)],
     place="living room")
task("watch_episode", "watch an episode of {series}|watch {series} on my laptop|catch an episode of {series}",
     ["start_episode", rep("watch_scenes", 1, 3), opt(step("snack_break", "get a snack|fetch something to eat|"
                                                          "grab a drink", [SNACK, WATCH], place="living room"), 0.4)],
     place="living room")
activity("series", "watch {series} in the evening|watch a couple of episodes of {series}|relax with {series}",
         [rep("watch_episode", 2, 3)], place="living room")

OPEN_BOOK = a("open {book} at my bookmark|pick up {book}|find my page in {book}", "book", 5, 15)
READ_BOOK = a("read a few pages of {book}|read {book}|keep reading {book}", "book", 90, 180)
UNDERLINE = a("underline a sentence I like|read a passage again|put the bookmark back", "book pencil", 8, 20)
step("read_pages", "read a chapter of {book}|read some of {book}|read on in {book}", [OPEN_BOOK, READ_BOOK, READ_BOOK,
     opt(UNDERLINE, 0.4)], place="living room")
task("read_book_task", "read {book}|read a few chapters of {book}|spend time reading {book}",
     [rep("read_pages", 1, 3)], place="living room")
activity("reading_book", "read {book} on the sofa|read my book|relax with {book}", [rep("read_book_task", 2, 3),
         opt("phone_break", 0.3)], place="living room")

CONSOLE = a("turn on the console and pick up the controller|start the game|load my saved game", "controller tv", 15, 40)
PLAY_LEVEL = a("play a level of {game}|play through a mission in {game}|fight a boss in {game}", "controller tv",
               90, 180)
GAME_MENU = a("look at the map in {game}|upgrade my character in {game}|sort my inventory in {game}", "controller tv",
              15, 45)
step("game_round", "play a round of {game}|play a couple of levels of {game}|play a mission of {game}", [PLAY_LEVEL, opt(GAME_MENU, 0.6),
     PLAY_LEVEL], place="living room")
task("start_gaming", "start playing {game}|get a game of {game} going|load my game of {game}",
     [step("start_game", "start up {game}|get the game going|load {game}", [CONSOLE, GAME_MENU, PLAY_LEVEL],
           place="living room")], place="living room")
task("gaming_task", "play {game}|play some {game}|spend time in {game}", [rep("game_round", 2, 3)],
     place="living room")
activity("gaming", "play video games|play {game} for a while|relax with a video game",
         ["start_gaming", rep("gaming_task", 1, 2)], place="living room")

# --- friends ------------------------------------------------------------------------------------------
ORDER = a("order a {drink} at the counter|ask the barista for a {drink}|order two drinks", "counter cup", 20, 50,
          speech="order")
WAIT_DRINK = a("wait for the drinks|pick up our drinks at the counter|carry the cups to the table", "cup tray", 20, 60)
CHAT = a("chat with {friend} about {chat_topic}|talk with {friend} about {chat_topic}|listen to {friend} talk about "
         "{chat_topic}", "cup", 60, 150, speech="chat")
LAUGH = a("laugh at {friend}'s story|show {friend} a photo on my phone|look at photos on {friend}'s phone", "phone",
          20, 60, speech="chat", screen="phone:photos")
PAY = a("pay the bill with my phone|split the bill with {friend}|pay at the counter", "phone card", 15, 40,
        screen="phone:pay")
step("get_drinks", "order drinks at the café|get coffee for us|order at the counter", [ORDER, WAIT_DRINK], place="café")
step("talk_friend", "have a conversation with {friend}|catch up with {friend}|chat with {friend}",
     [CHAT, opt(LAUGH, 0.5), CHAT], place="café", slots={"chat_topic": "@chat_topic"})
step("pay_leave", "pay and say goodbye|settle the bill and leave|pay and head out", [PAY, a(
    "say goodbye to {friend}|hug {friend} goodbye|wave goodbye to {friend}", "", 8, 20, speech="chat")], place="café")
task("coffee_friend_task", "have a coffee with {friend}|meet {friend} at the café|catch up with {friend} over coffee",
     ["get_drinks", rep("talk_friend", 2, 3)], place="café")
task("leave_cafe", "pay and leave the café|wrap up and leave|say goodbye to {friend}", ["pay_leave"], place="café")
activity("coffee_friend", "meet {friend} for coffee|catch up with {friend} at a café|have coffee with {friend}",
         ["coffee_friend_task", "leave_cafe"], place="café", slots={"drink": ("flat white", "cappuccino", "tea")})

MENU = a("read the menu|choose something from the menu|look at the specials", "menu", 30, 80)
ORDER_FOOD = a("order {dish_out} from the waiter|tell the waiter what we want|order food for the table", "menu", 20, 50,
               speech="order")
EAT_OUT = a("eat {dish_out}|share the starters with {friend}|eat and talk with {friend}", "plate fork", 90, 180,
            speech="chat")
step("order_meal", "order dinner at the restaurant|choose and order food|order our meal", [MENU, ORDER_FOOD],
     place="restaurant")
step("eat_out_step", "eat dinner with {friend}|have dinner and talk|eat together", [EAT_OUT, EAT_OUT, opt(CHAT, 0.6)],
     place="restaurant", slots={"chat_topic": "@chat_topic"})
task("restaurant_meal", "have dinner at a restaurant with {friend}|eat out with {friend}|dine with {friend}",
     ["order_meal", rep("eat_out_step", 1, 3)], place="restaurant")
activity("dinner_out", "go out for dinner with {friend}|eat at a restaurant with {friend}|have dinner with friends",
         ["restaurant_meal", "leave_cafe"], place="restaurant",
         slots={"dish_out": ("a pizza", "a ramen bowl", "a burger", "dumplings", "a curry")})

# --- the dog -----------------------------------------------------------------------------------------
LEASH = a("clip the leash on {dog}|call {dog} and put on the leash|get {dog}'s leash", "leash dog", 10, 25, speech="dog")
WALK = a("walk {dog} around the park|walk with {dog} along the street|follow {dog} through the park", "leash dog",
         90, 180, place="park")
SNIFF = a("wait while {dog} sniffs a tree|let {dog} sniff around|stop for {dog} to sniff", "dog", 20, 60, place="park")
BALL = a("throw the ball for {dog}|throw the ball across the grass|throw a stick for {dog}", "ball dog", 30, 90, place="park",
         speech="dog")
BAG = a("pick up after {dog} with a bag|bag {dog}'s mess|clean up after {dog}", "poop_bag", 10, 25, place="park")
step("leave_with_dog", "take {dog} out|head out with {dog}|get {dog} ready for a walk", [LEASH, WALK], place="hallway")
step("walk_park", "walk {dog} through the park|stroll in the park with {dog}|walk around with {dog}",
     [WALK, opt(SNIFF, 0.7), opt(BAG, 0.5), WALK], place="park")
step("play_fetch", "play fetch with {dog}|play with {dog} in the park|let {dog} run after the ball",
     [BALL, BALL, opt(BALL, 0.5)], place="park")
task("dog_out", "take {dog} out of the house|set off with {dog}|leave for a walk with {dog}", ["leave_with_dog"],
     place="street")
task("dog_walk_task", "walk {dog} around the park|take {dog} through the park|go around the park with {dog}",
     ["walk_park", opt("play_fetch", 0.6)], place="park")
FEED = a("fill {dog}'s bowl with food|feed {dog}|give {dog} fresh water", "dog_bowl dog", 15, 40, place="kitchen")
task("feed_dog", "feed {dog}|give {dog} dinner|take care of {dog}'s food", [step("feed_dog_step", "fill {dog}'s bowls|give {dog} "
     "food and water|fill the dog bowls", [FEED, FEED], place="kitchen")], place="kitchen")
activity("dog_walk", "walk {dog}|take {dog} out for a walk|go for a walk with {dog}",
         ["dog_out", "dog_walk_task", opt("feed_dog", 0.4)], place="park")
