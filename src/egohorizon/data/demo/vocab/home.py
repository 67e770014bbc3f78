"""Life at home: breakfast, cooking and eating dinner, chores, getting ready, going to bed."""

from egohorizon.data.demo.grammar import a, activity, anyorder, opt, pick, rep, step, task

# Dishes set several slots at once, so every step of a recipe names the same food.
DISHES = (
    {"dish": "pasta with tomato sauce", "veg": "onion", "veg2": "tomatoes", "base": "pasta", "pan": "pot"},
    {"dish": "a vegetable stir-fry", "veg": "pepper", "veg2": "broccoli", "base": "rice", "pan": "wok"},
    {"dish": "a chickpea curry", "veg": "onion", "veg2": "spinach", "base": "rice", "pan": "pan"},
    {"dish": "a mushroom risotto", "veg": "mushrooms", "veg2": "onion", "base": "rice", "pan": "pan"},
    {"dish": "tacos", "veg": "pepper", "veg2": "avocado", "base": "tortillas", "pan": "pan"},
    {"dish": "a lentil soup", "veg": "carrots", "veg2": "celery", "base": "lentils", "pan": "pot"},
    {"dish": "an omelette with salad", "veg": "tomatoes", "veg2": "lettuce", "base": "eggs", "pan": "pan"},
)

# --- breakfast --------------------------------------------------------------------------------
MUG = a("take a mug from the shelf|grab a mug off the shelf|get a mug out of the cupboard", "mug shelf", 3, 8)
KETTLE = a("fill the kettle with water|fill the kettle at the tap|put water in the kettle", "kettle tap", 6, 15)
BOIL = a("switch on the kettle|turn the kettle on|wait for the water to boil", "kettle", 20, 60)
COFFEE = a("spoon coffee into the French press|put ground coffee in the press|add coffee to the press",
           "coffee_jar french_press", 6, 15)
POUR = a("pour hot water over the coffee|pour the water into the press|fill the press with hot water",
         "kettle french_press", 5, 12)
PLUNGE = a("press the plunger down and pour a cup|pour the coffee into my mug|fill my mug with coffee",
           "french_press mug", 8, 20)
MILK = a("add a splash of milk|pour some milk into the coffee|add milk to my coffee", "milk mug", 3, 8)
step("make_coffee", "make a cup of coffee|brew myself a coffee|prepare a coffee",
     [MUG, KETTLE, BOIL, COFFEE, POUR, PLUNGE, opt(MILK, 0.6)], place="kitchen")

BREAD = a("cut two slices of bread|slice some bread|cut bread on the board", "bread bread_knife", 10, 25)
TOAST = a("put the bread in the toaster|toast the bread|wait for the toast", "toaster bread", 40, 100)
SPREAD = a("spread butter and jam on the toast|butter my toast|put jam on the toast", "butter_knife toast jam", 15, 35)
step("make_toast", "make toast|prepare some toast|make myself toast with jam", [BREAD, TOAST, SPREAD], place="kitchen")

BOWL = a("take a bowl from the cupboard|get a bowl out|grab a cereal bowl", "bowl cupboard", 3, 8)
MUESLI = a("pour muesli into the bowl|fill the bowl with muesli|shake some muesli into the bowl", "muesli bowl", 5, 12)
YOGHURT = a("add yoghurt and milk|pour milk over the muesli|spoon yoghurt on top", "yoghurt bowl", 5, 12)
FRUIT = a("cut a banana over the bowl|slice a banana into the muesli|add some berries", "banana knife bowl", 10, 25)
step("make_muesli", "prepare a bowl of muesli|make muesli with fruit|put together a muesli bowl",
     [BOWL, MUESLI, YOGHURT, opt(FRUIT, 0.7)], place="kitchen")

EGGS = a("crack two eggs into a bowl|break eggs into a bowl|whisk two eggs", "eggs bowl", 15, 35)
FRY = a("cook the eggs in the pan|stir the scrambled eggs|fry the eggs", "pan spatula stove", 60, 150)
PLATE_EGGS = a("slide the eggs onto a plate|put the eggs on a plate", "pan plate", 5, 12)
step("make_eggs", "make scrambled eggs|cook eggs for breakfast|fry some eggs", [EGGS, FRY, PLATE_EGGS],
     place="kitchen")

task("prepare_breakfast", "make breakfast|prepare my breakfast|get breakfast ready",
     [anyorder("make_coffee", pick("make_toast", "make_muesli", "make_eggs", weights=(3, 3, 1)))],
     place="kitchen")

EAT_BF = a("eat my breakfast at the table|eat breakfast|have a few bites of breakfast", "plate fork", 40, 120)
DRINK_COFFEE = a("drink my coffee|sip my coffee|drink some coffee", "mug", 10, 30)
step("eat_breakfast_step", "eat breakfast at the table|have my breakfast|sit down for breakfast",
     [EAT_BF, DRINK_COFFEE, EAT_BF, opt(DRINK_COFFEE, 0.5)], place="kitchen")
task("eat_breakfast", "have breakfast|eat my breakfast while reading the news|eat breakfast at the kitchen table",
     ["eat_breakfast_step", opt("read_news", 0.7), opt("eat_breakfast_step", 0.4)], place="kitchen")

SINK = a("put the dishes in the sink|carry my plate to the sink|bring the dishes to the sink", "plate sink", 5, 12)
RINSE = a("rinse my mug and plate|rinse the dishes under the tap|wash up the breakfast dishes", "mug sponge sink", 15, 45)
WIPE = a("wipe the table|wipe down the counter|clean the table with a cloth", "cloth", 10, 25)
step("clear_table", "clear the breakfast table|tidy up after breakfast|clear away breakfast",
     [SINK, RINSE, opt(WIPE, 0.6)], place="kitchen")
task("clean_after_breakfast", "clean up after breakfast|tidy the kitchen after breakfast|do the breakfast dishes",
     ["clear_table"], place="kitchen")

activity("breakfast", "have breakfast at home|make and eat breakfast|start the day with breakfast",
         ["prepare_breakfast", "eat_breakfast", "clean_after_breakfast"], place="kitchen")

# --- getting ready / leaving ----------------------------------------------------------------------
activity("shower", "take a shower and get dressed", private=True, duration=(900, 1500), place="bathroom")
LAPTOP_BAG = a("put my laptop in my backpack|pack my laptop and charger|slide the laptop into my bag",
               "laptop backpack", 8, 20)
LUNCHBOX = a("pack my lunch box|put leftovers in a lunch box|fill my lunch box", "lunch_box fridge", 20, 50)
BOTTLE = a("fill my water bottle|fill up my bottle at the tap", "water_bottle tap", 8, 15)
step("pack_bag", "pack my bag for the day|get my backpack ready|pack my things for the day",
     [LAPTOP_BAG, opt(LUNCHBOX, 0.5), opt(BOTTLE, 0.6)], place="hallway")
SHOES = a("put on my shoes|tie my shoelaces|slip on my shoes", "shoes", 15, 40)
JACKET = a("put on my jacket|grab my jacket from the hook|zip up my jacket", "jacket", 8, 20)
KEYS = a("grab my keys and lock the door|take my keys and lock up|lock the front door", "keys door", 6, 15)
step("dress_to_leave", "get dressed to go out|put on shoes and jacket|get ready to head out",
     [SHOES, JACKET, KEYS], place="hallway")
task("get_ready_to_leave", "get ready to leave the flat|pack up and head out|get ready to go",
     ["pack_bag", "dress_to_leave"], place="hallway")
activity("leave_home", "get ready to leave home|pack up and leave the flat|head out for the day",
         [opt("phone_break", 0.3), "get_ready_to_leave"], place="hallway")

# --- dinner -------------------------------------------------------------------------------------
FRIDGE = a("open the fridge and take out the {veg}|get the {veg} from the fridge|take the {veg} out of the fridge",
           "fridge {veg}", 6, 15)
PANTRY = a("take the {base} from the cupboard|get the {base} out|grab a pack of {base}", "cupboard {base}", 5, 12)
RECIPE = a("look up the recipe for {dish} on my phone|check the recipe on my phone|read the recipe steps",
           "phone", 10, 30, screen="phone:recipe")
step("gather_ingredients", "get out the ingredients for {dish}|gather everything for {dish}|"
     "collect the ingredients", [anyorder(FRIDGE, PANTRY), opt(RECIPE, 0.5)], place="kitchen")
BOARD = a("put the cutting board on the counter|take out a knife and the board|set up the cutting board",
          "cutting_board knife", 5, 10)
CHOP1 = a("chop the {veg}|cut the {veg} into pieces|dice the {veg}", "knife {veg} cutting_board", 40, 110)
CHOP2 = a("slice the {veg2}|cut up the {veg2}|chop the {veg2}", "knife {veg2} cutting_board", 30, 90)
step("chop_vegetables", "chop the vegetables for {dish}|cut up the vegetables|prepare the vegetables",
     [BOARD, CHOP1, opt(CHOP2, 0.8)], place="kitchen")
task("prep_dinner", "prepare the ingredients for {dish}|get everything ready to cook {dish}|"
     "do the prep for {dish}", ["gather_ingredients", "chop_vegetables"], place="kitchen")
HEAT = a("heat oil in the {pan}|put the {pan} on the stove|turn on the stove under the {pan}", "{pan} stove", 20, 60)
ADD = a("add the {veg} to the {pan}|tip the {veg} into the {pan}|throw the {veg} in", "{pan} {veg}", 8, 20)
STIR = a("stir the {pan}|stir everything in the {pan}|keep stirring the food", "wooden_spoon {pan}", 30, 100)
SEASON = a("season with salt and pepper|add spices|taste and add some salt", "salt spice_jar", 8, 20)
BASE = a("cook the {base}|put the {base} on to cook|check whether the {base} is done", "{base} pot stove", 30, 90)
step("cook_main", "cook the {veg} in the {pan}|fry the vegetables|get the {pan} going",
     [HEAT, ADD, STIR, opt(SEASON, 0.7), STIR], place="kitchen")
step("cook_base", "get the {base} cooked|prepare the {base}|get the {base} ready", [BASE, opt(BASE, 0.5)],
     place="kitchen")
task("cook_dinner", "cook {dish}|make {dish} for dinner|cook {dish} on the stove",
     [anyorder("cook_main", "cook_base"), opt("cook_main", 0.4)], place="kitchen")
PLATE = a("serve {dish} onto a plate|fill my plate with {dish}|dish up {dish}", "{pan} plate", 10, 25)
CUTLERY = a("put cutlery on the table|lay the table|get a fork and a glass", "fork glass", 8, 20)
step("serve", "serve dinner|put dinner on the table|dish up dinner", [PLATE, CUTLERY], place="kitchen")
EAT_DIN = a("eat {dish}|have a few bites of {dish}|eat my dinner", "plate fork", 45, 120)
step("eat_dinner_step", "eat dinner at the table|have dinner|sit down to eat {dish}", [EAT_DIN, rep(EAT_DIN, 1, 3)],
     place="kitchen")
WATCH_WHILE = a("watch a video on my laptop while eating|watch an episode while I eat", "laptop plate",
                60, 120, screen="laptop:video")
step("watch_while_eating", "watch something while I eat|watch a show over dinner|eat in front of my laptop",
     [WATCH_WHILE, EAT_DIN], place="kitchen")
task("eat_dinner", "eat dinner|have dinner at home|eat {dish} for dinner",
     ["serve", pick("eat_dinner_step", "watch_while_eating", weights=(2, 1)), opt("eat_dinner_step", 0.5)],
     place="kitchen")
DISHWASHER = a("load the dishwasher|put the plates in the dishwasher|stack the dishes in the dishwasher",
               "dishwasher plate", 20, 60)
SCRUB = a("scrub the {pan} in the sink|wash the {pan} by hand|clean the {pan}", "{pan} sponge sink", 30, 90)
COUNTER = a("wipe down the counter|clean the stove top|wipe the hob", "cloth stove", 15, 40)
step("wash_up", "do the dishes|wash up after dinner|clean the dishes", [DISHWASHER, SCRUB], place="kitchen")
step("wipe_kitchen", "wipe down the kitchen|clean the counters|wipe the stove and table", [COUNTER, WIPE],
     place="kitchen")
task("clean_after_dinner", "clean up the kitchen after dinner|tidy the kitchen|clean up after cooking",
     ["wash_up", opt("wipe_kitchen", 0.6)], place="kitchen")
activity("cook_dinner_home", "cook dinner at home|make dinner|cook myself dinner",
         ["prep_dinner", "cook_dinner"], place="kitchen")
activity("eat_dinner_home", "eat dinner and clean up|have dinner and do the dishes|have dinner",
         ["eat_dinner", "clean_after_dinner"], place="kitchen")

# --- chores ------------------------------------------------------------------------------------
SORT = a("sort the dirty clothes into darks and lights|sort the laundry|separate the clothes by colour",
         "laundry_basket clothes", 40, 100)
LOAD = a("load the washing machine|stuff the clothes into the machine|put a load in the washer",
         "washing_machine clothes", 30, 70)
DETERGENT = a("add detergent|pour in the washing liquid|put a detergent pod in", "detergent washing_machine", 5, 15)
START = a("start the washing machine|set the programme and press start|turn on the machine",
          "washing_machine", 5, 12)
step("load_laundry", "start a load of laundry|put a wash on|get the washing machine going",
     [SORT, LOAD, DETERGENT, START], place="bathroom")
RACK = a("set up the drying rack|unfold the clothes horse", "drying_rack", 10, 25)
HANG = a("hang the wet shirts on the rack|drape the towels over the rack|peg the socks on the rack",
         "drying_rack clothes", 40, 100)
step("hang_laundry", "hang the laundry to dry|hang up the washing|put the wet clothes on the rack",
     [RACK, HANG, rep(HANG, 1, 3)], place="living room")
FOLD = a("fold a pile of dry shirts|fold the dry clothes|fold towels", "clothes", 40, 110)
STORE = a("put the folded clothes in the wardrobe|put the clothes away|put the shirts in the drawer",
          "wardrobe clothes", 15, 40)
step("fold_laundry", "fold the dry laundry|fold and put away clothes|sort out the dry washing",
     [rep(FOLD, 1, 3), STORE], place="bedroom")
task("laundry_wash", "wash my clothes|do a load of laundry|put on a wash", ["load_laundry"], place="bathroom")
task("laundry_finish", "hang and fold the laundry|deal with the washing|finish the laundry",
     ["hang_laundry", opt("fold_laundry", 0.7)], place="living room")
activity("laundry", "do the laundry|wash and hang my clothes|take care of the laundry",
         ["laundry_wash", opt("phone_break", 0.4), "laundry_finish"], place="bathroom")

VAC_GET = a("get the vacuum cleaner out|plug in the vacuum|take the hoover out of the closet", "vacuum_cleaner", 10, 25)
VAC = a("vacuum the floor|vacuum under the sofa|hoover the carpet", "vacuum_cleaner", 50, 130)
VAC_AWAY = a("put the vacuum away|roll up the cord and store the vacuum", "vacuum_cleaner", 10, 20)
step("vacuum", "vacuum the living room|hoover the flat|vacuum the floors", [VAC_GET, VAC, rep(VAC, 1, 2), VAC_AWAY],
     place="living room")
SPRAY = a("spray cleaner on the sink|spray the bathroom tiles|spray the mirror", "spray_bottle sink", 8, 20)
SCRUB_B = a("scrub the sink|scrub the toilet|wipe the mirror", "brush sink", 40, 100)
step("clean_bathroom", "clean the bathroom|scrub the bathroom|give the bathroom a clean", [SPRAY, SCRUB_B, SCRUB_B],
     place="bathroom")
TRASH = a("tie up the rubbish bag|take the bin bag out|empty the kitchen bin", "trash_bag bin", 15, 35)
RECYCLE = a("sort the recycling|flatten the cardboard boxes|rinse bottles for recycling", "cardboard bin", 20, 50)
step("take_out_trash", "take out the trash|empty the bins|take the rubbish out", [TRASH, opt(RECYCLE, 0.6)],
     place="kitchen")
task("clean_floors", "clean the floors|vacuum the flat|do the vacuuming", ["vacuum"], place="living room")
task("clean_wet_rooms", "clean the bathroom properly|scrub the bathroom and sink|do the bathroom",
     ["clean_bathroom", opt("take_out_trash", 0.5)], place="bathroom")
activity("clean_flat", "clean the flat|do the weekly cleaning|clean up the apartment",
         [anyorder("clean_floors", "clean_wet_rooms"), opt("phone_break", 0.3)], place="living room")

WATER = a("water the plants on the windowsill|water the basil|give the plants some water", "watering_can plant", 20, 50)
DEAD = a("pick dead leaves off the plant|trim the plant|turn the pots to the light", "plant", 15, 40)
step("water_plants", "water the plants|look after my plants|tend to the plants", [WATER, opt(DEAD, 0.5), WATER],
     place="living room")
TIDY_DESK = a("tidy up my desk|put the papers on my desk in a pile|clear my desk", "papers desk", 30, 80)
TIDY_SOFA = a("fold the blanket on the sofa|straighten the cushions|pick up clothes from the floor", "blanket sofa", 15, 40)
step("tidy_living", "tidy the living room|straighten up the room|put things back in place", [TIDY_SOFA, TIDY_DESK],
     place="living room")
task("tidy_flat", "tidy up the flat|put the flat in order|tidy up a bit", ["tidy_living", opt("water_plants", 0.5)],
     place="living room")
task("empty_bins", "take out the rubbish|empty the bins and sort the recycling|take the trash down",
     ["take_out_trash"], place="kitchen")
activity("tidy_home", "tidy up at home|tidy the flat and water plants|get the flat in order",
         ["tidy_flat", opt("empty_bins", 0.5)], place="living room")

# --- evening / bed -------------------------------------------------------------------------------
ALARM = a("set an alarm for tomorrow morning|set my alarm|check the alarm for tomorrow", "phone", 5, 15,
          screen="phone:clock")
CHARGE = a("plug my phone into the charger|put my phone on charge|connect the charger", "phone charger", 4, 10)
step("set_alarm", "set my alarm and charge the phone|get my phone ready for the night|set the alarm",
     [ALARM, CHARGE], place="bedroom")
CLOTHES_TMRW = a("lay out clothes for tomorrow|pick clothes for tomorrow|put tomorrow's clothes on the chair",
                 "clothes chair", 20, 60)
step("prepare_tomorrow", "get things ready for tomorrow|prepare for tomorrow|lay things out for the morning",
     [CLOTHES_TMRW, opt(LAPTOP_BAG, 0.5)], place="bedroom")
task("evening_prep", "get ready for tomorrow|prepare for the next day|sort things out for tomorrow",
     ["prepare_tomorrow", "set_alarm"], place="bedroom")
task("phone_in_bed", "scroll on my phone in bed|look at my phone in bed|read on my phone in bed",
     [pick("browse_feed", "read_news"), opt("reply_to_message", 0.4)], place="bedroom")
activity("bedtime", "get ready for bed|wind down for the night|go to bed",
         ["evening_prep", opt("phone_in_bed", 0.7)], place="bedroom", interruptible=False)
activity("brush_teeth", "brush my teeth and wash my face", private=True, duration=(300, 600), place="bathroom")
